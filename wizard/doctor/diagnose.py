"""Run the doctor on a machine: detect, read what the checks need, check, report.

The one entry point the CLI and the TUI call. It reads the machine only through the Host it is
given (a real one, a recorded one, or the simulation's sandbox) and the wizard's state
directory, and changes nothing on either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.facts import HostFacts
from gpuwizard.doctor.checks import run_checks
from gpuwizard.doctor.findings import Report, by_severity
from gpuwizard.doctor.observed import LogText, Observed
from gpuwizard.doctor.readings import read_observed
from gpuwizard.machine.detect import detect_host
from gpuwizard.machine.host import Host
from gpuwizard.recommend.table import load_table


@dataclass(frozen=True)
class Diagnosis:
    """A report and what it was made from (the support bundle packs all three)."""

    facts: HostFacts
    observed: Observed
    report: Report


def diagnose(
    host: Host,
    state_dir: Path,
    named_logs: Sequence[LogText] = (),
    env: str | None = None,
    bench_dirs: Sequence[Path] = (),
) -> Diagnosis:
    """Look at the machine and judge it.

    Args:
        host: the machine's door.
        state_dir: the wizard's state directory (journal, step logs, benchmark results).
        named_logs: logs a person asked about (``--log``).
        env: the Python environment with torch, instead of the one the journal names.
        bench_dirs: more state directories whose bench/ results count (a non-root user's).
    """
    facts = detect_host(host)
    observed = read_observed(host, facts, state_dir, named_logs, env, bench_dirs)
    findings = run_checks(facts, observed, load_table())
    return Diagnosis(facts, observed, Report(by_severity(findings), observed.unread))
