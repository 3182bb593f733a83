"""Benchmark: the slowest known-error signature on adversarial 64 KB lines (target: < 10 ms).

Run: python tests/perf/bench_known_errors.py [--repeat N]
Prints figures; asserts nothing (shared machines are noisy). Each signature is timed raw, on
lines without the matcher's cut (MAX_LINE_CHARS), so a pattern that backtracks shows here even
though the matcher would never give it such a line; the matcher's own time on the same lines
is printed beside it.
"""

from __future__ import annotations

import argparse
import re
import sys
import time

from gpuwizard.core.hints import find_all, known_errors

TARGET_MS = 10.0
LINE = 65536


def adversarial_lines() -> dict[str, str]:
    """64 KB lines a broken tool could print: filler, NULs, and each pattern's own words repeated."""
    lines = {"spaces": " " * LINE, "NULs": "\0" * LINE, "letters": "a" * LINE}
    for hint in known_errors():
        words = [w for w in re.split(r"[^A-Za-z0-9_:./ ]+", hint.signature) if len(w) > 1]
        unit = " ".join(words) or "x"
        lines[f"words of {hint.id}"] = (unit * (LINE // len(unit) + 1))[:LINE]
    return lines


def slowest(lines: dict[str, str], repeat: int) -> list[tuple[float, str, str]]:
    """(best-of-``repeat`` ms, pattern id, line name) for every pattern on its worst line."""
    rows = []
    for hint in known_errors():
        worst = (0.0, "")
        for name, line in lines.items():
            best = min(_timed(hint.pattern.search, line) for _ in range(repeat))
            worst = max(worst, (best, name))
        rows.append((worst[0], hint.id, worst[1]))
    return sorted(rows, reverse=True)


def _timed(search: object, line: str) -> float:
    start = time.perf_counter()
    search(line)  # type: ignore[operator]
    return (time.perf_counter() - start) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    lines = adversarial_lines()
    rows = slowest(lines, args.repeat)
    matcher = max(
        min(_timed(find_all, line) for _ in range(args.repeat)) for line in lines.values()
    )
    print(f"known-error signatures on {len(lines)} adversarial lines of {LINE // 1024} KB")
    print(
        f"  slowest signature   {rows[0][0]:7.2f} ms   {rows[0][1]} on {rows[0][2]}   (target < {TARGET_MS:g} ms)"
    )
    for ms, hint, line in rows[1:5]:
        print(f"                      {ms:7.2f} ms   {hint} on {line}")
    print(
        f"  whole matcher       {matcher:7.2f} ms   (all {len(rows)} signatures, lines cut to their ends)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
