"""Fetching ahead beside the steps (wizard/runner/prefetch.py), with the real detached runner.

The runner starts the fetching process itself; both run the simulated host's tools, so the
order of their calls, the events the front ends read, a failure and a kill -9 are all real.
"""

from __future__ import annotations

import os
import signal
import time

from gpuwizard.runner import events as ev
from gpuwizard.runner.layout import EXIT_DONE
from gpuwizard.runner.prefetch import LOCK, STATE
from tests.sim.conftest import H100, WAIT_S

GATE = "/tmp/ahead-gate"


def first(calls, wanted) -> int:
    return next(i for i, call in enumerate(calls) if wanted(call))


def is_driver_fetch(call) -> bool:
    return call.tool == "gpuwizard-apt-fetch" and "nvidia-driver-580-server-open" in call.argv


def is_driver_install(call) -> bool:
    return (
        call.tool == "apt-get"
        and "install" in call.argv
        and "nvidia-driver-580-server-open" in call.argv
    )


def is_torch_fetch(call) -> bool:
    return call.tool == "uv" and "--target" in call.argv


def is_torch_install(call) -> bool:
    return call.tool == "uv" and "install" in call.argv and "--target" not in call.argv


def wait_for_event(host, wanted, timeout_s: float = WAIT_S):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [e for e in host.events() if wanted(e)]
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError("no such event in time")


def test_later_steps_downloads_are_fetched_before_their_steps_run(sim):
    host = sim(H100)
    host.plan()

    assert host.finish()[-1] == EXIT_DONE

    calls = host.calls(ahead=True)
    assert all(
        c.ahead
        == (c.tool == "gpuwizard-apt-fetch" or is_torch_fetch(c) or "ahead/uv" in " ".join(c.argv))
        for c in calls
    )
    assert first(calls, is_driver_fetch) < first(calls, is_driver_install)
    assert first(calls, is_torch_fetch) < first(calls, is_torch_install)
    fetched = {e.step: e for e in host.events_of(ev.FetchedAhead) if e.state == "done"}
    assert {"install-nvidia-driver", "install-fabric-manager", "install-torch"} <= set(fetched)
    assert fetched["install-torch"].detail == "PyTorch's wheels"
    assert not host.path("/var/cache/gpuwizard/ahead/uv-target").exists()  # scratch removed


def test_a_failed_fetch_is_said_and_its_step_downloads_for_itself(sim):
    host = sim(H100)
    host.scenario(rules=[{"tool": "gpuwizard-apt-fetch", "match": "nvidia-driver", "output": "E: 404  Not Found", "exit": 1, "ahead": True}])  # fmt: skip
    host.plan()

    assert host.finish()[-1] == EXIT_DONE

    failed = [e for e in host.events_of(ev.FetchedAhead) if e.state == "failed"]
    assert [e.step for e in failed] == ["install-nvidia-driver"]
    assert "its step downloads them itself" in failed[0].detail
    assert host.step_states()["install-nvidia-driver"] == "done"


def test_the_step_waits_for_its_downloads_while_they_are_fetched(sim):
    host = sim(H100)
    host.scenario(rules=[{"tool": "uv", "match": "--target", "wait_for": GATE, "ahead": True}])
    host.plan()
    runner = host.launch()

    waiting = wait_for_event(
        host, lambda e: isinstance(e, ev.FetchedAhead) and e.state == "waiting"
    )
    host.write(GATE, "")
    codes = [host.wait(runner), *host.finish()]

    assert codes[-1] == EXIT_DONE
    assert waiting.step in ("install-torch", None)  # before its step, or before the reboot
    events = host.events()
    waited = events.index(waiting)
    assert waited < next(
        i
        for i, e in enumerate(events)
        if isinstance(e, ev.StepStarted) and e.step == "install-torch"
    )


def test_a_fetch_killed_mid_way_leaves_the_steps_to_download_for_themselves(sim):
    host = sim(H100)
    host.scenario(rules=[{"tool": "uv", "match": "--target", "wait_for": GATE, "ahead": True}])
    host.plan()
    runner = host.launch()
    wait_for_event(host, lambda e: isinstance(e, ev.FetchedAhead) and e.state == "waiting")

    pid = int((host.state_dir / LOCK).read_text())
    os.killpg(os.getpgid(pid), signal.SIGKILL)  # the process and the uv it runs, as a crash would
    host.scenario(rules=[])  # the next round is not held
    codes = [host.wait(runner), *host.finish()]

    assert codes[-1] == EXIT_DONE
    assert host.step_states()["install-torch"] == "done"
    assert '"install-torch"' in (host.state_dir / STATE).read_text()


def test_the_fetching_process_s_calls_never_write_the_machine_s_state(sim):
    """It runs beside the steps: a state it loaded and wrote back would undo a step's change made
    meanwhile (seen: the initramfs a step rebuilt was forgotten, and nouveau stayed)."""
    import subprocess

    from gpuwizard.core.ahead import AHEAD_MARK
    from gpuwizard.sim.runner import sim_tools

    host = sim(H100)
    state = host.sandbox.state_file
    before = (state.read_bytes(), state.stat().st_mtime_ns)
    tools = sim_tools(host.place)
    argv = ("gpuwizard-fetch", "pypi:uv==0.13.9", "/var/cache/gpuwizard/ahead/uv", "--unpinned")
    done = subprocess.run(
        list(tools.resolve(argv)),
        env={**os.environ, **tools.env, AHEAD_MARK: "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert host.path("/var/cache/gpuwizard/ahead/uv").exists()
    assert (state.read_bytes(), state.stat().st_mtime_ns) == before
