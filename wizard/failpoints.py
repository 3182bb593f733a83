"""Failpoints: named places where a test can make the process die, raise or stall.

``failpoint("journal.after_fsync")`` does nothing unless the environment variable
GPUWIZARD_FAILPOINTS arms it, e.g. ``journal.after_fsync=kill;executor.before_run=raise``.
Actions: ``kill`` (SIGKILL to this process, as a crash would), ``raise`` (FailpointHit), and
``sleep(ms)``. Modelled on FreeBSD fail(9) and gofail. Production never sets the variable.
"""

from __future__ import annotations

import os
import re
import signal
import time

ENV = "GPUWIZARD_FAILPOINTS"
_SLEEP = re.compile(r"^sleep\((\d+)\)$")


class FailpointHit(RuntimeError):
    """Raised by an armed ``raise`` failpoint."""


def armed() -> dict[str, str]:
    spec = os.environ.get(ENV, "")
    pairs = (item.split("=", 1) for item in spec.split(";") if "=" in item)
    return {name.strip(): action.strip() for name, action in pairs}


def failpoint(name: str) -> None:
    action = armed().get(name)
    if action is None:
        return
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "raise":
        raise FailpointHit(name)
    if match := _SLEEP.match(action):
        time.sleep(int(match.group(1)) / 1000)
