"""Every package a plan installs, checked against the real archive from inside a chroot machine.

Each planned ``apt-get ... install PKGS`` runs as ``apt-get -s`` (simulate) with the plan's exact
options, after the plan's own earlier steps that change apt's sources ran for real (Debian's
non-free components). A name that apt cannot locate fails the check, unless an earlier step of
the same plan adds a third-party repository that cannot be reached from here (NVIDIA's CUDA or
container-toolkit repository): such names are reported as not checked, never as passing, and the
rest of the line is checked without them. ``ArchiveView`` reads another release's archive (apt
lists and an empty dpkg status in a folder of their own) from inside the same root.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from gpuwizard.core.ops import AptInstall, AptUpdate
from gpuwizard.core.plan import APT_ENV, Action, Plan, StepPlan, WriteFile
from tests.chroot.machine import ChrootMachine

THIRD_PARTY_STEPS = {
    "add-cuda-repo": "NVIDIA's CUDA repository (developer.download.nvidia.com)",
    "install-container-toolkit": "NVIDIA's container-toolkit repository (nvidia.github.io)",
}
_MISSING = (
    re.compile(r"E: Unable to locate package (\S+)"),
    re.compile(r"E: Package '([^']+)' has no installation candidate"),
    re.compile(r"E: Version '[^']+' for '([^']+)' was not found"),
)
ENV = {**APT_ENV, "LC_ALL": "C"}


def is_install(action: Action) -> bool:
    return isinstance(action, AptInstall) and bool(action.packages)


def packages_of(argv: tuple[str, ...]) -> list[str]:
    return [w for w in argv[argv.index("install") + 1 :] if not w.startswith("-")]


@dataclass
class LineCheck:
    step: str
    argv: tuple[str, ...]
    checked: list[str] = field(default_factory=list)
    not_checked: dict[str, str] = field(default_factory=dict)
    problem: str | None = None
    """apt's error when the line does not resolve (a missing name from Debian's side, a conflict)."""


def simulate(machine: ChrootMachine, argv: tuple[str, ...]) -> tuple[int, str, list[str]]:
    """(exit status, output, names apt could not find) of the line run with ``-s``."""
    done = machine.run(["apt-get", "-s", *argv[1:]], env=ENV, timeout_s=300)
    output = done.stdout + done.stderr
    missing = [m.group(1) for pattern in _MISSING for m in pattern.finditer(output)]
    return done.returncode, output, missing


def check_line(
    machine: ChrootMachine, step: str, argv: tuple[str, ...], third_party: str | None
) -> LineCheck:
    """Resolve one planned install line; names only a third-party source has are set aside."""
    result = LineCheck(step, argv)
    line = list(argv)
    while True:
        code, output, missing = simulate(machine, tuple(line))
        if code == 0:
            result.checked = packages_of(tuple(line))
            return result
        if not missing or third_party is None:
            result.problem = output.strip()[-1500:]
            return result
        for name in missing:
            result.not_checked[name] = third_party
            line.remove(name)
        if not packages_of(tuple(line)):
            return result


def apply_sources_step(machine: ChrootMachine, step: StepPlan) -> None:
    """Carry out a step that changes apt's sources (files, then ``apt-get update``) for real;
    a file that already holds this content (an earlier plan wrote it) needs no second update."""
    writes = [a for a in step.actions if isinstance(a, WriteFile)]
    if all(
        machine.path(w.path).exists() and machine.path(w.path).read_text() == w.content
        for w in writes
    ):
        return
    for action in step.actions:
        if isinstance(action, WriteFile):
            target = machine.path(action.path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(action.content)
            target.chmod(action.mode)
        elif isinstance(action, AptUpdate):
            machine.run(list(action.command().argv), env=ENV, check=True, timeout_s=600)


def sources_state(machine: ChrootMachine) -> tuple[str, ...]:
    folder = machine.path("/etc/apt/sources.list.d")
    return tuple(sorted(p.name for p in folder.iterdir())) if folder.is_dir() else ()


def check_plan(
    machine: ChrootMachine, plan: Plan, seen: dict[object, LineCheck] | None = None
) -> Iterator[LineCheck]:
    """Every install line of ``plan`` in order, its earlier source changes made first.

    ``seen`` keeps lines already resolved against the same sources (plans share most lines).
    """
    added: list[str] = []
    cache = {} if seen is None else seen
    for step in plan.steps:
        if step.id == "enable-debian-nonfree":
            apply_sources_step(machine, step)
        if step.id in THIRD_PARTY_STEPS:
            added.append(THIRD_PARTY_STEPS[step.id])
        third_party = (
            f"only in a third-party repository the plan adds, which cannot be reached here: {'; '.join(added)}"
            if added
            else None
        )
        for action in step.actions:
            if isinstance(action, AptInstall) and is_install(action):
                argv = action.command().argv
                key = (sources_state(machine), argv, third_party)
                if key not in cache:
                    cache[key] = check_line(machine, step.id, argv, third_party)
                yield cache[key]


@dataclass(frozen=True)
class ArchiveView:
    """Another release's archive, read with apt from inside the machine's root."""

    machine: ChrootMachine
    suite: str
    debian: str
    security: str

    @property
    def folder(self) -> str:
        return f"/var/tmp/archive-{self.suite}"

    def options(self) -> list[str]:
        f = self.folder
        return [
            "-o", f"Dir::Etc::SourceList={f}/sources.list", "-o", f"Dir::Etc::SourceParts={f}/parts",
            "-o", f"Dir::State::Lists={f}/lists", "-o", f"Dir::State::status={f}/status",
            "-o", f"Dir::Cache={f}/cache",
        ]  # fmt: skip

    def update(self) -> None:
        components = "main contrib non-free non-free-firmware"
        sources = (
            f"deb {self.debian} {self.suite} {components}\n"
            f"deb {self.debian} {self.suite}-updates {components}\n"
            f"deb {self.security} {self.suite}-security {components}\n"
        )
        f = self.folder
        script = (
            f"mkdir -p {f}/parts {f}/lists/partial {f}/cache/archives/partial && : > {f}/status && "
            f"printf '%s' \"$1\" > {f}/sources.list"
        )
        self.machine.run(["/bin/sh", "-c", script, "view", sources], check=True)
        self.machine.run(["apt-get", "-q", *self.options(), "update"], env=ENV, check=True)

    def candidate(self, package: str) -> str | None:
        done = self.machine.run(["apt-cache", *self.options(), "policy", package], env=ENV)
        found = re.search(r"Candidate: (\S+)", done.stdout)
        return None if found is None or found.group(1) == "(none)" else found.group(1)

    def installable(self, packages: list[str]) -> tuple[bool, str]:
        argv = [
            "apt-get",
            "-s",
            "-q",
            *self.options(),
            "--no-install-recommends",
            "install",
            *packages,
        ]
        done = self.machine.run(argv, env=ENV)
        return done.returncode == 0, (done.stdout + done.stderr)[-1500:]
