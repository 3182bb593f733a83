"""What the doctor found: one ``Finding`` per check, gathered into a ``Report``.

Pure data, shared by the checks, the CLI and the Doctor screen (which must not import anything
that reads the machine). A finding says what was seen in one sentence, what to do, and the
evidence it rests on, so a person can check the doctor's reasoning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["ok", "warn", "problem", "unknown"]
"""ok: nothing to do; warn: worth a look; problem: broken; unknown: could not be checked."""
Status = Literal["healthy", "problems", "unchecked"]

SEVERITY_ORDER: dict[Severity, int] = {"problem": 0, "warn": 1, "unknown": 2, "ok": 3}
EXIT_HEALTHY = 0
EXIT_PROBLEMS = 1
EXIT_UNCHECKED = 2


@dataclass(frozen=True)
class Finding:
    check: str
    """Stable kebab-case id of the check ("cuda-versions"); "known-error" for a log match."""
    severity: Severity
    title: str
    """A few words for a list: "CUDA: driver 12.8, toolkit 12.4, torch 13.0"."""
    explanation: str
    """One sentence: what is true and why it matters."""
    fix: str = ""
    """What to do, with the exact commands or settings; empty when nothing is needed."""
    evidence: tuple[str, ...] = ()
    """What the finding rests on: versions read, log lines, file contents."""
    source: str = ""
    """Where the knowledge comes from (a document, a known issue)."""


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...]
    unread: tuple[str, ...] = ()
    """What could not be read, in words ("kernel log: dmesg: Operation not permitted")."""

    @property
    def status(self) -> Status:
        if any(f.severity == "problem" for f in self.findings):
            return "problems"
        if all(f.severity == "unknown" for f in self.findings):
            return "unchecked"
        return "healthy"

    @property
    def exit_code(self) -> int:
        """0 healthy (warnings allowed), 1 a problem found, 2 nothing could be checked."""
        return {"healthy": EXIT_HEALTHY, "problems": EXIT_PROBLEMS, "unchecked": EXIT_UNCHECKED}[
            self.status
        ]

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def summary(self) -> str:
        """ "2 problems, 1 warning, 9 ok, 1 not checked"."""
        parts = [
            (self.count("problem"), "problem", "problems"),
            (self.count("warn"), "warning", "warnings"),
            (self.count("ok"), "ok", "ok"),
            (self.count("unknown"), "not checked", "not checked"),
        ]
        return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in parts if n) or (
            "nothing to check"
        )


def by_severity(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """Problems first, then warnings, what could not be checked, and what is fine."""
    return tuple(sorted(findings, key=lambda f: SEVERITY_ORDER[f.severity]))
