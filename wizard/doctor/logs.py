"""Known errors in logs: failed install steps' logs and logs a person names (``--log``).

Each known error found becomes a finding with its filled-in explanation and fix. Out-of-memory
and NCCL errors are left to their own checks (wizard/doctor/training.py), which add this
machine's numbers and interface names to the fix. Pure.
"""

from __future__ import annotations

from gpuwizard.core.hints import find_all
from gpuwizard.doctor.findings import Finding
from gpuwizard.doctor.observed import LogText

OWN_CHECKS = ("out-of-memory", "multi-node")
"""Topics whose known errors another check reports, with more to say."""


def log_findings(logs: tuple[LogText, ...]) -> tuple[Finding, ...]:
    findings = []
    for log in logs:
        found = find_all(log.text)
        hits = [hit for hit in found if hit.hint.topic not in OWN_CHECKS]
        for hit in hits:
            findings.append(
                Finding(
                    "known-error",
                    "problem",
                    f"{log.label}: {hit.id}",
                    hit.explanation,
                    hit.fix,
                    (hit.line, f"log: {log.path}"),
                    hit.hint.source,
                )
            )
        if not found and log.label.startswith("failed step"):
            findings.append(
                Finding(
                    "known-error",
                    "warn",
                    f"{log.label}: no known cause",
                    "The step failed with an error gpuwizard has no entry for.",
                    f"Read the end of {log.path}; `gpuwizard doctor --bundle` packs it for a bug report.",
                    (f"log: {log.path}",),
                )
            )
    return tuple(findings)
