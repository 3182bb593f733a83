"""A simulated host under tmp_path, driven by the real runner: the harness of the fault tests.

Every test gets its own XDG_STATE_HOME and working directory inside tmp_path, so nothing here
touches the real machine or the person's state. ``SimHost`` drives the runner two ways:

- in-process (``run``, ``install``): ``run_session`` on the sandbox, stopping before each reboot,
  which the test then performs (``reboot``); fast and deterministic, and no process to kill;
- detached (``launch``, ``finish``): the real ``python -m gpuwizard.sim.runner`` in its own
  session, which the fake reboot SIGKILLs; for kills, failpoints, secrets and concurrency.

At teardown every process still at work in the test's sandbox (a runner, a stand-in tool, a
front end) is killed, and the test errors if one had to be: no background process outlives it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect
import pytest

from gpuwizard.core.ahead import AHEAD_MARK
from gpuwizard.core.facts import HostFacts
from gpuwizard.core.plan import Plan, WriteFile
from gpuwizard.core.request import SetupRequest
from gpuwizard.machine.detect import detect_host
from gpuwizard.recommend.table import load_table
from gpuwizard.runner import events as ev
from gpuwizard.runner.control import Backend, launch, prepare_run
from gpuwizard.runner.failpoints import ENV as FAILPOINTS
from gpuwizard.runner.follow import EventFollower
from gpuwizard.runner.journal import JournalData, parse
from gpuwizard.runner.layout import EVENTS, JOURNAL
from gpuwizard.runner.secrets import send_secret
from gpuwizard.runner.session import SessionOptions, run_session
from gpuwizard.setup.plan import make_plan
from gpuwizard.sim.backend import sim_backend
from gpuwizard.sim.machine import sandbox_host
from gpuwizard.sim.reboot import reboot
from gpuwizard.sim.runner import sim_tools
from gpuwizard.sim.sandbox import SIM_ENV, Sandbox, SimState, place_for

H100 = "h100x8-ubuntu2204-fresh"
A100 = "a100x4-ubuntu2004-fresh"
T4_DEBIAN = "t4-debian12-fresh"
WAIT_S = 60
"""Upper bound for anything a test waits on; a healthy wait takes a second or two."""
SIGKILLED = -signal.SIGKILL


@dataclass(frozen=True)
class Call:
    """One stand-in tool call from sandbox/calls.jsonl."""

    tool: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    stdin_tty: bool
    time: float

    @property
    def ahead(self) -> bool:
        """Made by the process that fetches ahead, not by a step (runner/prefetch.py)."""
        return self.env.get(AHEAD_MARK) == "1"

    @property
    def key(self) -> tuple[str, ...]:
        """argv with the program's folder dropped, as a planned command's argv is compared."""
        return command_key(self.argv)


def command_key(argv: tuple[str, ...]) -> tuple[str, ...]:
    return (Path(argv[0]).name, *argv[1:])


def planned_commands(plan: Plan, *, reboots: bool = True) -> Counter[tuple[str, ...]]:
    """Every command the plan runs, once each: what a clean install's calls.jsonl holds."""
    return Counter(
        command_key(action.command().argv)
        for step in plan.steps
        if reboots or not step.reboot
        for action in step.actions
        if not isinstance(action, WriteFile)
    )


class SimHost:
    """One simulated machine in tmp_path, and every way a test shapes, runs and reads it."""

    def __init__(self, profile: str, home: Path) -> None:
        self.profile = profile
        self.home = home
        self.place = place_for(profile, home)
        self.backend: Backend = sim_backend(profile, home=home)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.terminals: list[pexpect.spawn[bytes]] = []
        self.launched_at: dict[int, int] = {}
        """Runner pid -> size of events.jsonl when it was launched."""

    # ------------------------------------------------------------------------------ places
    @property
    def sandbox(self) -> Sandbox:
        return self.place.sandbox

    @property
    def state_dir(self) -> Path:
        return self.place.state_dir

    def path(self, absolute: str) -> Path:
        """A path on the simulated machine."""
        return self.sandbox.path(absolute)

    # ------------------------------------------------------------------- shaping the host
    def scenario(self, **data: Any) -> None:
        self.sandbox.write_json("scenario.json", data)

    def state(self) -> SimState:
        return self.sandbox.load()

    def set_state(self, **changes: Any) -> None:
        self.sandbox.save(dataclasses.replace(self.sandbox.load(), **changes))

    def write(self, absolute: str, content: str) -> None:
        target = self.path(absolute)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)

    def enable_secure_boot(self) -> None:
        """Secure Boot on, as mokutil reports it (detection and the fake reboot both ask it)."""
        commands = self.sandbox.json("commands.json", {})
        commands["mokutil --sb-state"] = {
            "returncode": 0,
            "stdout": "SecureBoot enabled\n",
            "stderr": "",
        }
        self.sandbox.write_json("commands.json", commands)

    def boot_id(self) -> str:
        return self.path("/proc/sys/kernel/random/boot_id").read_text().strip()

    # ---------------------------------------------------------------------------- planning
    def facts(self) -> HostFacts:
        return detect_host(sandbox_host(self.sandbox))

    def plan(self, request: SetupRequest | None = None) -> Plan:
        """Detect, recommend and plan as ``gpuwizard apply`` does, and prepare the run."""
        facts = self.facts()
        plan, selection = make_plan(load_table(), facts, request or SetupRequest())
        prepare_run(self.state_dir, plan, selection, facts)
        return plan

    # ----------------------------------------------------------------- in-process runner
    def run(self, options: SessionOptions | None = None) -> int:
        """One runner session in this process; it stops before a reboot instead of running it."""
        tools = sim_tools(self.place)
        return run_session(
            lambda: sandbox_host(self.sandbox), tools, self.state_dir, options or SessionOptions()
        )

    def reboot(self) -> None:
        """The reboot the person confirmed (the in-process runner never runs one itself)."""
        reboot(self.sandbox)

    def install(self, max_runs: int = 5) -> list[int]:
        """Run, reboot when asked, run again, until the runner stops for another reason."""
        codes = [self.run()]
        while codes[-1] == 10 and len(codes) < max_runs:
            self.reboot()
            codes.append(self.run())
        return codes

    # ------------------------------------------------------------------- detached runner
    def launch(self, failpoints: str = "", *, yes: bool = True) -> subprocess.Popen[bytes]:
        """The real detached runner; ``failpoints`` arms GPUWIZARD_FAILPOINTS in it alone."""
        env = {**self.backend.env, FAILPOINTS: failpoints}
        command = [*self.backend.runner, *(["--yes"] if yes else [])]
        events = self.state_dir / EVENTS
        offset = events.stat().st_size if events.exists() else 0
        process = launch(command, self.state_dir, env=env, systemd=False)
        self.processes.append(process)
        self.launched_at[process.pid] = offset  # its own prompts only, not earlier runs' ones
        return process

    def wait(self, process: subprocess.Popen[bytes], answer: str | None = None) -> int:
        """Wait for a detached runner to end, answering its secret prompts with ``answer``."""
        follower = EventFollower(self.state_dir / EVENTS, self.launched_at.get(process.pid, 0))
        deadline = time.monotonic() + WAIT_S
        while process.poll() is None:
            assert time.monotonic() < deadline, "the runner did not end in time"
            for item in follower.poll():
                if isinstance(item, ev.Envelope) and isinstance(item.event, ev.PromptShown):
                    assert answer is not None, f"unexpected prompt: {item.event.text}"
                    send_secret(self.state_dir, answer)
            time.sleep(0.02)
        return process.returncode

    def finish(self, max_launches: int = 6, answer: str | None = None) -> list[int]:
        """Launch the runner again after each (fake) reboot killed it, until it ends by itself."""
        codes: list[int] = []
        while len(codes) < max_launches:
            codes.append(self.wait(self.launch(), answer))
            if codes[-1] != SIGKILLED:
                break
        return codes

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``gpuwizard ARGS`` as a person types it, on this simulated host (no terminal on its
        standard input, wherever the tests run)."""
        return subprocess.run(
            [*GPUWIZARD, *args, "--simulate", self.profile],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=self.cli_env(),
            timeout=WAIT_S,
            check=False,
        )

    def cli_env(self) -> dict[str, str]:
        return {**os.environ, "XDG_STATE_HOME": str(self.home.parent)}

    # ---------------------------------------------------------------------- reading back
    def events(self) -> list[ev.RunEvent]:
        path = self.state_dir / EVENTS
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [ev.decode(line).event for line in lines]

    def events_of(self, kind: type[Any]) -> list[Any]:
        return [event for event in self.events() if isinstance(event, kind)]

    def journal(self) -> JournalData:
        """The journal as it is on disk, parsed strictly (no fallback to the backup)."""
        return parse((self.state_dir / JOURNAL).read_text(encoding="utf-8"))

    def step_states(self) -> dict[str, str]:
        return {record.id: record.state for record in self.journal().steps}

    def calls(self, *, ahead: bool = False) -> list[Call]:
        """The steps' tool calls in order; with ``ahead``, those made fetching ahead too."""
        if not self.sandbox.calls.exists():
            return []
        entries = [json.loads(line) for line in self.sandbox.calls.read_text().splitlines()]
        calls = [
            Call(e["tool"], tuple(e["argv"]), e["env"], e["stdin_tty"], e["time"]) for e in entries
        ]
        return [call for call in calls if ahead or not call.ahead]

    def commands(self, since: int = 0) -> Counter[tuple[str, ...]]:
        return Counter(call.key for call in self.calls()[since:])

    def runner_log(self) -> str:
        path = self.state_dir / "runner.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # -------------------------------------------------------------------------- clean-up
    def survivors(self) -> list[int]:
        """Processes of this simulated host still alive: runners and stand-in tools."""
        marker = f"{SIM_ENV}={self.sandbox.directory}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if marker in (entry / "environ").read_bytes().split(b"\0") and _running(entry):
                    found.append(int(entry.name))
        return found

    def stop_everything(self) -> list[int]:
        """Kill what is left (after a short grace); returns the pids that had to be killed."""
        for terminal in self.terminals:
            terminal.close(force=True)
        deadline = time.monotonic() + 3
        while (alive := self.survivors()) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for process in self.processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        return alive


def _running(proc_entry: Path) -> bool:
    state = (proc_entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


GPUWIZARD = (
    sys.executable,
    "-c",
    "import sys; from gpuwizard.frontends.cli import main; sys.exit(main())",
)
"""The console script, without depending on where the venv put it."""


@pytest.fixture
def sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], SimHost]]:
    """``sim(profile)``: a fresh simulated host whose state lives in tmp_path only."""
    state_home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state_home))
    monkeypatch.delenv(FAILPOINTS, raising=False)
    monkeypatch.chdir(
        tmp_path
    )  # a command that escaped into a shell would write here, not in the repo
    hosts: list[SimHost] = []

    def make(profile: str) -> SimHost:
        host = SimHost(profile, state_home / "gpuwizard")
        hosts.append(host)
        return host

    yield make
    leaked = [pid for host in hosts for pid in host.stop_everything()]
    assert not leaked, f"processes outlived the test and were killed: {leaked}"


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    """Poll until ``condition()`` holds; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
