"""A secret through the whole machinery, end to end (reliability.md §9, T25).

Secure Boot on a Debian host whose driver is built by DKMS: the enroll-mok step asks for the
one-time MOK password. The detached runner announces the prompt by name in the event stream;
the test answers it over the answer socket, as the TUI and ``gpuwizard apply`` do. The canary
must get through intact (MokManager in the simulated console accepts only the password given)
and be found in no file afterwards: not the logs, journal, events, run record, runner.log (where
a crash report would go), nor the sandbox. tests/runner/test_pty.py covers the pty level alone.
"""

from __future__ import annotations

import hashlib

import pytest

from gpuwizard.runner import events as ev
from gpuwizard.runner.layout import EXIT_DONE
from gpuwizard.runner.ptytext import MASK
from tests.sim.conftest import SIGKILLED, T4_DEBIAN

# Quotes, $() and backticks that a shell would run, a backslash, and non-ASCII (2- and 3-byte).
CANARY = "Pw-c4n4ry-'\"$(touch pwned)`touch pwned`\\-Ä密"
MARKER = b"c4n4ry"
"""In every encoding of the canary (UTF-8, JSON escapes, shell quoting) these bytes survive."""


@pytest.mark.parametrize(
    "echo",
    [
        pytest.param("off", id="echo off before the answer"),
        pytest.param("late", id="echo off 300 ms after the prompt (the race)"),
        pytest.param(
            "on", id="echo never off: the terminal repeats the password", marks=pytest.mark.slow
        ),
    ],
)
def test_t25_a_mok_password_reaches_mokutil_intact_and_appears_in_no_file(sim, tmp_path, echo):
    host = sim(T4_DEBIAN)
    host.enable_secure_boot()
    digest = hashlib.sha256(CANARY.encode()).hexdigest()
    host.scenario(mok_console_password_sha256=digest, password_echo=echo)  # typed at MokManager
    plan = host.plan()
    assert plan.step("enroll-mok").actions

    assert host.finish(answer=CANARY) == [SIGKILLED, EXIT_DONE]

    prompts = host.events_of(ev.PromptShown)
    assert [(p.step, p.secret) for p in prompts] == [("enroll-mok", "mok-password")]
    assert host.state().mok == "enrolled", "the password arrived byte for byte"
    assert host.step_states()["enroll-mok"] == "done"
    leaks = [
        str(path.relative_to(tmp_path))
        for path in tmp_path.rglob("*")
        if path.is_file() and MARKER in path.read_bytes()
    ]
    assert leaks == []
    log = (host.state_dir / "logs" / host.journal().run_id / "enroll-mok.log").read_bytes()
    assert b"input password again: " in log, "the log was kept, minus the secret"
    assert (MASK.encode() in log) == (echo == "on"), "an echo is masked, and only an echo"
    assert not list(tmp_path.rglob("pwned")), "no shell ever saw it"


def test_the_simulation_keeps_no_hash_of_the_password_it_was_given(sim, tmp_path):
    """MokManager's stand-in needs to know whether the console password will match, not the
    password: nothing derived from it (its SHA-256 included) is written anywhere."""
    host = sim(T4_DEBIAN)
    host.enable_secure_boot()
    assert host.plan().step("enroll-mok").actions

    assert host.finish(answer=CANARY) == [SIGKILLED, EXIT_DONE]

    assert host.state().mok == "enrolled"
    digest = hashlib.sha256(CANARY.encode()).hexdigest().encode()
    found = [
        str(path.relative_to(tmp_path))
        for path in tmp_path.rglob("*")
        if path.is_file() and (MARKER in path.read_bytes() or digest in path.read_bytes())
    ]
    assert found == []
