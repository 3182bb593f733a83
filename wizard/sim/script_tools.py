"""Stand-ins for the tools an exported deploy.sh calls besides the plan's own, in the simulation:
``python -m gpuwizard.sim.script_tools TOOL ARGS``.

deploy.sh redoes gpuwizard-fetch with curl and sha256sum (and python3 to take one file out of a
wheel, and to check a key's fingerprint). Here curl serves simulated downloads: the same text the
shim's gpuwizard-fetch writes,
a package index listing the releases gpuwizard pins, and ``.sha256`` files that match; sha256sum
reports a simulated download's *published* digest (the one the plan pins), since no simulated
file can have it. Any other python3 call goes to the shim. Every call is logged to calls.jsonl,
as the shim logs; nothing here touches the network or a path outside the sandbox's files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path

from gpuwizard.core.download_pins import pin_for
from gpuwizard.runner.keycheck import UNPINNED
from gpuwizard.sim import shim
from gpuwizard.sim.sandbox import SIM_ENV, Sandbox
from gpuwizard.steps.install_python import UV_SPEC, UV_VERSION

SIMULATED = "simulated download of "
WHEEL_HOST = "https://files.pythonhosted.org/packages/sim"
CURL_VALUE_OPTIONS = ("-o", "--output", "--url", "-H", "--header", "--retry")


def wheel_name(name: str, version: str, arch: str) -> str:
    return f"{name}-{version}-py3-none-manylinux_2_17_{arch}.manylinux2014_{arch}.whl"


PINNED_RELEASES = {"uv": (UV_VERSION,)}
"""What the simulated package index holds: the releases gpuwizard's steps pin."""
ARCHES = ("x86_64", "aarch64")
PUBLISHED_SHA256 = {
    wheel_name("uv", UV_VERSION, arch): pin_for(UV_SPEC, arch).sha256 for arch in ARCHES
}
"""The digests the real files have, which the plan pins."""


def simulated(url: str) -> bytes:
    """What a simulated download of ``url`` holds: the text the shim's gpuwizard-fetch writes."""
    return f"{SIMULATED}{url}\n".encode()


def index_listing(name: str) -> bytes | None:
    """A PEP 691 JSON page of the simulated index, or None for a project it does not hold."""
    if name not in PINNED_RELEASES:
        return None
    wheels = [wheel_name(name, v, arch) for v in PINNED_RELEASES[name] for arch in ARCHES]
    files = [{"filename": wheel, "url": f"{WHEEL_HOST}/{wheel}"} for wheel in wheels]
    return json.dumps({"meta": {"api-version": "1.1"}, "name": name, "files": files}).encode()


def serve(url: str) -> bytes | None:
    if project := re.search(r"/simple/([^/]+)/$", url):
        return index_listing(project.group(1))
    if url.endswith(".sha256"):
        base = url.removesuffix(".sha256")
        digest = hashlib.sha256(simulated(base)).hexdigest()
        return f"{digest}  {base.rsplit('/', 1)[-1]}\n".encode()
    return simulated(url)


def curl(args: list[str]) -> int:
    """curl [-fsSL] [--retry N] [-H HEADER] [-o FILE] (--url URL | URL)."""
    output, url, index = None, None, 0
    while index < len(args):
        arg = args[index]
        if arg in CURL_VALUE_OPTIONS:
            value = args[index + 1]
            output = value if arg in ("-o", "--output") else output
            url = value if arg == "--url" else url
            index += 2
            continue
        if not arg.startswith("-"):
            url = arg
        index += 1
    body = serve(url) if url else None
    if body is None:
        sys.stderr.write(f"curl: (22) The requested URL returned error: 404 ({url})\n")
        return 22
    if output is None:
        sys.stdout.buffer.write(body)
    else:
        Path(output).write_bytes(body)
    return 0


def sha256sum(args: list[str]) -> int:
    """sha256sum [FILE...] (stdin when none): a simulated download reports its published digest."""
    files = [a for a in args if not a.startswith("-")]
    sources = [(name, Path(name).read_bytes()) for name in files] or [
        ("-", sys.stdin.buffer.read())
    ]
    for name, data in sources:
        digest = hashlib.sha256(data).hexdigest()
        text = data.decode("utf-8", "replace")
        if text.startswith(SIMULATED):
            published = PUBLISHED_SHA256.get(text[len(SIMULATED) :].strip().rsplit("/", 1)[-1])
            digest = published or digest
        sys.stdout.write(f"{digest}  {name}\n")
    return 0


def is_member_extraction(args: list[str]) -> bool:
    """deploy.sh's ``python3 -I -c '...zipfile...' WHEEL MEMBER``."""
    return len(args) == 5 and args[:2] == ["-I", "-c"] and "zipfile" in args[2]


def is_key_check(args: list[str]) -> bool:
    """deploy.sh's ``python3 -I -c "$GW_KEYCHECK" FILE FINGERPRINT|UNPINNED [--dearmor]``."""
    return len(args) in (5, 6) and args[:2] == ["-I", "-c"] and "def checked_key" in args[2]


def is_helper(args: list[str]) -> bool:
    """A python3 call deploy.sh makes itself, not one of the plan's commands."""
    return is_member_extraction(args) or is_key_check(args)


def key_check(args: list[str]) -> int:
    """A simulated key passes when the fingerprint asked for is the one gpuwizard pins for its
    URL (as sha256sum reports a simulated file's published digest), or UNPINNED where gpuwizard
    pins none (UNCONFIRMED); it stays as downloaded, as the wizard's own simulated download does."""
    file, asked = args[3], args[4]
    text = Path(file).read_text(encoding="utf-8", errors="replace")
    url = text[len(SIMULATED) :].strip() if text.startswith(SIMULATED) else ""
    try:
        pinned = (pin_for(url).fingerprint or UNPINNED) if url else None
    except LookupError:
        pinned = None
    if pinned is None or pinned != asked:
        sys.stderr.write(f"{file}: the key is not the pinned one; it was not used\n")
        return 1
    return 0


def extract_member(args: list[str]) -> int:
    """A simulated wheel holds no archive: its one member is its own simulated content."""
    sys.stdout.buffer.write(Path(args[3]).read_bytes())
    return 0


def main(argv: list[str]) -> int:
    tool, args = argv[0], argv[1:]
    if tool == "python3" and not is_helper(args):
        return shim.main(argv)
    shim.log_call(Sandbox(Path(os.environ[SIM_ENV])), tool, args)
    if tool == "curl":
        return curl(args)
    if tool == "sha256sum":
        return sha256sum(args)
    if tool == "python3":
        return key_check(args) if is_key_check(args) else extract_member(args)
    sys.stderr.write(f"{tool}: no stand-in in the simulation\n")
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
