"""Failpoints: named places where a test can make the process die, raise or stall.

``failpoint("journal.after_save")`` does nothing unless the environment variable
GPUWIZARD_FAILPOINTS arms it, e.g. ``journal.after_save=kill;executor.before_run=raise``.
Actions: ``kill`` (SIGKILL to this process, as a crash would), ``raise`` (FailpointHit), and
``sleep(ms)``. A suffix ``@N`` fires the action only at the N-th pass through that failpoint in
this process (``journal.after_save=kill@3``), so a test can crash a run at any point of it.
Every action that fires says so on stderr first (the runner's log), so a test can tell a
failpoint's kill from any other death. Modelled on FreeBSD fail(9) and gofail. Production never
sets the variable.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time

ENV = "GPUWIZARD_FAILPOINTS"
_SLEEP = re.compile(r"sleep\(([0-9]{1,9})\)")
_AT = re.compile(r"(.+)@([0-9]{1,9})")
_hits: dict[str, int] = {}


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
    _hits[name] = hit = _hits.get(name, 0) + 1
    if match := _AT.fullmatch(action):
        if int(match.group(2)) != hit:
            return
        action = match.group(1)
    sys.stderr.write(f"gpuwizard: failpoint {name} hit {hit}: {action}\n")
    sys.stderr.flush()
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "raise":
        raise FailpointHit(name)
    if match := _SLEEP.fullmatch(action):
        time.sleep(int(match.group(1)) / 1000)
