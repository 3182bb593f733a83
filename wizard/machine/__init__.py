"""The machine: the one door to it (``host``), what detection reads through that door
(``detect``, ``dpkgdb``), and here ``Machine``. Nothing here decides what to install or imports
anything above the pure values (wizard/core/).

``Machine`` is one machine, real or simulated, as every front end and command sees it: how to
look at it, where gpuwizard keeps its state, the environment its tools run in, and how to run a
Python environment's interpreter there.

The commands that change nothing (bench, export, doctor) need only this, and no root. A front
end that changes the machine takes a ``Backend`` (wizard/runner/control.py): this, plus how to
start the runner and how to reboot. There is no other machine type.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpuwizard.core.isolation import ISOLATED
from gpuwizard.machine.host import Host


@dataclass(frozen=True, kw_only=True)
class Machine:
    """The machine gpuwizard drives, real or simulated: how to look at it, where its state lives."""

    name: str
    """"this machine" or "simulated h100x8-ubuntu2204-fresh", for titles and messages."""
    host: Callable[[], Host]
    """A fresh view of the machine for detection."""
    state_dir: Path
    """Where the wizard keeps its journal; results go here when it is writable."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for the processes gpuwizard starts there (the runner, the benchmark)."""
    simulated: bool = False
    cli_args: tuple[str, ...] = ()
    """What chooses this machine on gpuwizard's command line (``--simulate PROFILE``), for the
    commands a front end suggests: without it they would act on the real machine."""
    python_in: Callable[[str], tuple[str, ...]] = lambda env: (f"{env}/bin/python", ISOLATED)
    """argv that runs the Python of the environment at this path (the benchmark runs there),
    isolated: nothing in the current folder, PYTHONPATH or the user's site-packages is imported."""

    def python_of(self, path: str, interpreter: str | None = None) -> tuple[str, ...]:
        """argv for an environment's Python: gpuwizard's (``path``/bin/python), or one found
        here with its own ``interpreter`` (/usr/bin/python3.10 for a distribution's torch). The
        simulated machine runs its stand-in for the environment at ``path``."""
        if interpreter is None or self.simulated:
            return self.python_in(path)
        return (interpreter, ISOLATED)


def user_state_dir() -> Path:
    """The per-user state folder (XDG_STATE_HOME/gpuwizard), for what runs without root."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpuwizard"
