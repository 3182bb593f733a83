"""Write the hashes file of a torch set from PyPI's metadata: wizard/core/torch-hashes/torch-V-VARIANT.txt.

    python tools/torch_hashes.py 2.14.1 [--index https://pypi.org/simple]

Only PyPI's default CUDA build of a release has its wheels on PyPI (the others are on PyTorch's
own index), so the set is the release's ``default`` variant in the compat table, with the
torchvision the table pairs with it. The file is a pip requirements file: ``torch==V`` and
``torchvision==W`` with the SHA-256 of every Linux wheel of each, one per continued line
(``--require-hashes`` accepts the one matching the interpreter), and one ``# wheel FILE
sha256:HEX`` line per wheel, so that a plan
can name the exact file it installs. The hashes come from the index's PEP 691 JSON; nothing is
downloaded but the listings.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

from gpuwizard.recommend.table import load_table

OUT = Path(__file__).parents[1] / "wizard" / "core" / "torch-hashes"


def linux_wheels(index: str, package: str, version: str) -> list[tuple[str, str]]:
    """(file name, sha256) of every manylinux wheel of ``package==version`` on the index."""
    request = urllib.request.Request(
        f"{index.rstrip('/')}/{package}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    found = [
        (f["filename"], f["hashes"]["sha256"])
        for f in files
        if f["filename"].startswith(f"{package}-{version}-")
        and "manylinux" in f["filename"]
        and f["filename"].endswith(".whl")
        and not f.get("yanked")
    ]
    if not found:
        sys.exit(f"{index} has no Linux wheel of {package} {version}")
    return sorted(found)


def render(index: str, version: str, variant: str, vision: str) -> str:
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    lines = [
        f"# torch {version} ({variant}, PyPI's default build) and torchvision {vision}: the SHA-256 of",
        "# every Linux wheel; install-torch writes the environment's own (uv --verify-hashes, or",
        "# pip download --require-hashes --no-deps). Dependencies come by version, not by hash.",
        f"# Source: the PEP 691 JSON of {index}/torch/ and {index}/torchvision/, read {today}",
        "# by tools/torch_hashes.py.",
    ]
    for package, pinned in (("torch", version), ("torchvision", vision)):
        wheels = linux_wheels(index, package, pinned)
        lines += [f"# wheel {name} sha256:{sha}" for name, sha in wheels]
        hashes = [f"    --hash=sha256:{sha}" for _, sha in wheels]
        lines.append(" \\\n".join([f"{package}=={pinned}", *hashes]))
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version")
    parser.add_argument("--index", default="https://pypi.org/simple")
    args = parser.parse_args()
    release = next((r for r in load_table().torch_releases if r.version == args.version), None)
    if release is None or not release.torchvision:
        sys.exit(f"torch {args.version} is not in the compat table with a confirmed torchvision")
    OUT.mkdir(exist_ok=True)
    path = OUT / f"torch-{args.version}-{release.default}.txt"
    path.write_text(render(args.index, args.version, release.default, release.torchvision))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
