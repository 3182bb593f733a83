"""Running small rendered deploy.sh scripts for real, with fake tools, in a temporary root.

``Deploy(folder)`` lays out a GPUWIZARD_ROOT, a folder of fake tools first on PATH and a log;
``run`` executes the test build of a script there (the shipped script has no such hooks).
Planned commands reach the fakes through PATH, as on a server: GPUWIZARD_SHIM is a pass-through
(``exec "$@"``), set only so the root check lets a non-root test run. Every fake appends its
argv, its GW_TEST_* environment, the names of any GPUWIZARD_SECRET_* variables it inherited and
the SHA-256 of its stdin (never stdin itself: a secret must reach no file) to the log;
``FAKE_EXIT_<tool>`` sets its exit status,
``FAKE_FAILS_<tool>=N`` makes its first N calls exit 100.
The fake curl serves URLs from a map file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwizard.core.plan import SCHEMA, Plan, StepPlan
from gpuwizard.export.bash import render_bash
from gpuwizard.export.source import ExportSource
from tests.export.conftest import source_for

FAKES = ("fake-tool", "other-tool", "apt-get", "reboot", "systemctl", "mokutil", "curl")
FAKE = """\
import hashlib, json, os, sys
from pathlib import Path

name = Path(sys.argv[0]).name
args = sys.argv[1:]
data = sys.stdin.buffer.read() if sys.stdin is not None else b""
record = {
    "argv": [name, *args],
    "env": {k: v for k, v in os.environ.items() if k.startswith("GW_TEST_")},
    "secret_env": sorted(k for k in os.environ if k.startswith("GPUWIZARD_SECRET_")),
    "stdin_sha256": hashlib.sha256(data).hexdigest() if data else None,
}
with open(os.environ["FAKE_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\\n")
if name == "curl":
    output = args[args.index("-o") + 1] if "-o" in args else None
    url = args[args.index("--url") + 1]
    served = json.loads(Path(os.environ["FAKE_SERVE"]).read_text()).get(url)
    if served is None:
        sys.stderr.write(f"curl: (22) The requested URL returned error: 404\\n")
        sys.exit(22)
    body = Path(served).read_bytes()
    if output:
        Path(output).write_bytes(body)
    else:
        sys.stdout.buffer.write(body)
key = name.replace("-", "_")
fails = int(os.environ.get("FAKE_FAILS_" + key, "0"))
count = Path(os.environ["FAKE_LOG"] + "." + key)
calls = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(calls))
if calls <= fails:
    sys.exit(100)
sys.exit(int(os.environ.get("FAKE_EXIT_" + key, "0")))
"""
BOOT_ID = "/proc/sys/kernel/random/boot_id"


@dataclass(frozen=True)
class Result:
    code: int
    output: str


def source_with(steps: Sequence[StepPlan], summary: Sequence[str] = ()) -> ExportSource:
    """An export source whose plan is exactly these steps (facts from a built-in profile)."""
    base = source_for("h100x8-ubuntu2204-fresh")
    plan = Plan(SCHEMA, tuple(steps), tuple(summary))
    return ExportSource(plan, base.selection, base.facts, version="0.1.0")


class Deploy:
    """A temporary machine for deploy.sh: root, fake tools, call log."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.root = folder / "root"
        self.bin = folder / "bin"
        self.log = folder / "calls.jsonl"
        self.served = folder / "served.json"
        self.script = folder / "deploy.sh"
        self.root.mkdir(parents=True, exist_ok=True)
        self.bin.mkdir(exist_ok=True)
        self.served.write_text("{}")
        for name in FAKES:
            fake = self.bin / name
            fake.write_text(f"#!{sys.executable}\n{FAKE}")
            fake.chmod(0o755)
        passthrough = self.bin / "passthrough"
        passthrough.write_text('#!/bin/sh\nexec "$@"\n')
        passthrough.chmod(0o755)
        self.set_boot_id("boot-1")

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")

    def set_boot_id(self, boot_id: str) -> None:
        self.path(BOOT_ID).parent.mkdir(parents=True, exist_ok=True)
        self.path(BOOT_ID).write_text(boot_id + "\n")

    def serve(self, url: str, body: bytes) -> None:
        served = json.loads(self.served.read_text())
        file = self.folder / "files" / str(len(served))
        file.parent.mkdir(exist_ok=True)
        file.write_bytes(body)
        served[url] = str(file)
        self.served.write_text(json.dumps(served))

    def write_script(self, source: ExportSource) -> Path:
        self.script.write_text(render_bash(source, test_build=True), encoding="utf-8")
        return self.script

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(self.folder),
            "LANG": "C.UTF-8",
            "GPUWIZARD_ROOT": str(self.root),
            "GPUWIZARD_SHIM": str(self.bin / "passthrough"),
            # The scripts here are made from a built-in profile's facts but run in an empty
            # root: the host check (tests/export/test_hostcheck.py) is waived.
            "GPUWIZARD_FORCE": "1",
            "FAKE_LOG": str(self.log),
            "FAKE_SERVE": str(self.served),
            **(extra or {}),
        }

    def run(self, *args: str, env: Mapping[str, str] | None = None) -> Result:
        done = subprocess.run(
            ["/bin/bash", str(self.script), *args],
            env=self.env(env),
            cwd=self.folder,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            start_new_session=True,  # no controlling terminal: /dev/tty cannot be opened
            timeout=60,
            check=False,
        )
        output = done.stdout.decode("utf-8", "replace") + done.stderr.decode("utf-8", "replace")
        return Result(done.returncode, output)

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]

    def argvs(self) -> list[list[str]]:
        return [call["argv"] for call in self.calls()]

    def markers(self) -> list[str]:
        folder = self.path("/var/lib/gpuwizard/deploy")
        return sorted(p.name for p in folder.glob("*.done")) if folder.exists() else []
