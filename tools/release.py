"""Make the release archive: ``gpuwizard-VERSION.tar.gz`` and its line in ``SHA256SUMS``.

    python3 tools/release.py [REF] [--out DIR]      REF: a tag or commit (default HEAD)

The archive is what a server without git downloads (README, "On a real fresh server"): the
tree of REF under ``gpuwizard-VERSION/``, so ``tools/bootstrap.sh`` inside it installs from it
as from a clone. It is the same bytes every time for the same REF (files in path order, owner
root, modes 0644/0755, every time stamp the commit's, gzip without a name or date), so anyone
can rebuild a published archive from its tag and compare the digest with SHA256SUMS.
``--worktree`` archives the files as they are on disk instead (tracked and untracked, not
ignored): the tests use it to try what is not committed yet. Never uploads anything.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXECUTABLE = 0o755
PLAIN = 0o644


def git(*args: str) -> bytes:
    done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=False)
    if done.returncode != 0:
        sys.exit(f"release: git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def committed_files(ref: str) -> Iterator[tuple[str, bytes, int]]:
    """(path, content, mode) of every file of ``ref``, as git archive gives them."""
    with tarfile.open(fileobj=io.BytesIO(git("archive", "--format=tar", ref))) as tar:
        for member in tar:
            if member.isfile():
                data = tar.extractfile(member)
                assert data is not None
                yield member.name, data.read(), member.mode


def worktree_files() -> Iterator[tuple[str, bytes, int]]:
    """(path, content, mode) of every tracked or untracked, not ignored file on disk."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split(b"\0")
    for name in sorted({n.decode() for n in listed if n}):
        path = REPO / name
        if path.is_file() and not path.is_symlink():
            yield name, path.read_bytes(), path.stat().st_mode


def version_of(files: dict[str, tuple[bytes, int]]) -> str:
    # pyproject.toml's own line (tomllib is 3.11+; this runs on the 3.10 servers support too)
    found = re.search(r'^version = "([^"]+)"$', files["pyproject.toml"][0].decode(), re.M)
    if found is None:
        sys.exit("release: pyproject.toml names no version")
    return found.group(1)


def archive(files: dict[str, tuple[bytes, int]], mtime: int) -> tuple[str, bytes]:
    """The archive's file name and bytes: the same files and time give the same bytes."""
    top = f"gpuwizard-{version_of(files)}"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            content, mode = files[name]
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.uname, info.gname = len(content), mtime, "root", "root"
            info.mode = EXECUTABLE if mode & 0o111 else PLAIN
            tar.addfile(info, io.BytesIO(content))
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=packed, mtime=0) as out:
        out.write(raw.getvalue())
    return f"{top}.tar.gz", packed.getvalue()


def build(ref: str | None, out: Path) -> Path:
    """Write the archive of ``ref`` (None: the working tree) and SHA256SUMS into ``out``."""
    mtime = int(git("log", "-1", "--format=%ct", ref or "HEAD").strip())
    found = committed_files(ref) if ref is not None else worktree_files()
    name, data = archive({path: (content, mode) for path, content, mode in found}, mtime)
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_bytes(data)
    (out / "SHA256SUMS").write_text(f"{hashlib.sha256(data).hexdigest()}  {name}\n")
    return out / name


def main() -> int:
    parser = argparse.ArgumentParser(description="Make gpuwizard's release archive.")
    parser.add_argument("ref", nargs="?", default="HEAD", help="a tag or commit (default HEAD)")
    parser.add_argument("--worktree", action="store_true", help="the files on disk instead")
    parser.add_argument("--out", type=Path, default=REPO / "dist", help="default: dist/")
    args = parser.parse_args()
    made = build(None if args.worktree else args.ref, args.out)
    print((args.out / "SHA256SUMS").read_text().strip())
    print(f"wrote {made}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
