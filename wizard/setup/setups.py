"""The setups this machine's runs made, as export sources.

An export should be the setup that ran. The latest run's journal names its plan, and
``planned-facts.json`` the facts it was planned on; each new run keeps the earlier ones aside
(``journal-before-<run>.json``, ``planned-facts-before-<run>.json``). When the latest run only
verified a machine set up already (the wizard opened again to export), its plan reproduces
nothing, so the newest earlier run that changed the machine is exported instead, and said so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.facts import HostFacts
from gpuwizard.export.source import ALREADY_SET_UP, ExportSource
from gpuwizard.runner.journal import Journal, JournalData, JournalError
from gpuwizard.runner.layout import JOURNAL, PLANNED_FACTS


class SetupError(ValueError):
    """The latest run's files cannot be read; the message says which and why."""


@dataclass(frozen=True)
class Setup:
    source: ExportSource
    note: str | None = None
    """Said beside the export: which run it comes from when not the latest, or that it
    reproduces nothing."""


def exportable_setup(state_dir: Path) -> Setup | None:
    """What to export from this machine's runs; None when no run was made here.

    Raises:
        SetupError: the latest run's journal or facts are damaged or unreadable.
    """
    if not (state_dir / JOURNAL).exists():
        return None
    try:
        latest, journal = _source(state_dir / JOURNAL, state_dir / PLANNED_FACTS)
    except JournalError as error:
        raise SetupError(f"cannot read the wizard's journal: {error}") from None
    except (OSError, ValueError) as error:
        raise SetupError(f"cannot read the facts the plan was made on: {error}") from None
    if not latest.already_set_up:
        return Setup(latest, left_note(journal.left))
    for older in sorted(state_dir.glob("journal-before-run-*.json"), key=_mtime, reverse=True):
        facts = state_dir / older.name.replace("journal-", "planned-facts-", 1)
        try:
            earlier, _ = _source(older, facts)
        except (JournalError, OSError, ValueError):
            continue  # an older run's files, or one from before facts were kept: not usable
        if not earlier.already_set_up:
            note = (
                "exported the setup an earlier run made here (its journal was last saved "
                f"{_day(_mtime(older))}); the latest run only verified it"
            )
            return Setup(earlier, note)
    return Setup(latest, ALREADY_SET_UP)


def left_note(left: tuple[str, ...]) -> str | None:
    """What an export of a run with skipped steps says: they are in it (it sets up the plan)."""
    if not left:
        return None
    return (
        f"you skipped {'; '.join(left)} on this machine: the export sets up every step of the "
        "plan, that one included"
    )


def _source(journal: Path, facts: Path) -> tuple[ExportSource, JournalData]:
    data = Journal.load(journal).data
    made_on = HostFacts.from_json(facts.read_text("utf-8"))
    return ExportSource(data.plan, data.selection, made_on), data


def _mtime(path: Path) -> float:
    return path.stat().st_mtime


def _day(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))
