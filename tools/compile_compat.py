"""Compile wizard/recommend/compat.yaml into compat.json beside it (run after editing the YAML).

The JSON is what gpuwizard loads: the same validated table without a YAML parser on the way,
stamped with the length and CRC-32 of the YAML it came from (wizard/recommend/table.py explains why).
tests/recommend/test_table.py fails while the compiled copy is stale.

Run: python tools/compile_compat.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpuwizard.recommend.table import compile_table

HERE = Path(__file__).resolve().parent.parent / "wizard" / "recommend"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="only say whether compat.json is current"
    )
    args = parser.parse_args(argv)
    text = (HERE / "compat.yaml").read_text(encoding="utf-8")
    wanted = compile_table(text)
    target = HERE / "compat.json"
    current = target.read_text(encoding="utf-8") if target.exists() else None
    if args.check:
        if current != wanted:
            print(f"{target} is stale: run python tools/compile_compat.py", file=sys.stderr)
            return 1
        return 0
    if current != wanted:
        target.write_text(wanted, encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
