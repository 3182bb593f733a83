"""What the wizard's own run left undone: the steps the person skipped (issue 31).

A skipped step is not done: the setup is incomplete, and the doctor says so beside the checks
of what that step would have set up (Fabric Manager on an NVSwitch system, for one).
"""

from __future__ import annotations

from gpuwizard.core.facts import HostFacts
from gpuwizard.doctor.findings import Finding
from gpuwizard.doctor.observed import Observed
from gpuwizard.recommend.table import CompatTable


def check_skipped_steps(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    del facts, table
    if seen.left is None:
        return None
    if not seen.left:
        return Finding(
            "skipped-steps",
            "ok",
            "No step of gpuwizard's run was skipped",
            "Every step the wizard planned here ran or was already done.",
            source="gpuwizard's journal",
        )
    names = "; ".join(seen.left)
    return Finding(
        "skipped-steps",
        "warn",
        f"Skipped in the setup: {names}",
        "You skipped these steps in gpuwizard's run, so the setup is not complete: what they set "
        "up is missing unless it was done another way.",
        "Run gpuwizard again: its new plan has each step that is still needed, with its reason.",
        evidence=tuple(f"{title}: skipped by you (journal.json)" for title in seen.left),
        source="gpuwizard's journal",
    )
