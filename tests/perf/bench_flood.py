"""Benchmark: the TUI while a step floods its log, through the real runner on the simulated host.

Run: python tests/perf/bench_flood.py [--mb 200 --mb 1000] [--profile NAME]

For each size, a simulated H100 server's `apt-get update` prints MB megabytes of lines (then
fails, so the run stops on that step). The install screen runs in its own process (headless
Textual, the real InstallScreen and RunHandle, the detached runner): it presses Run all, then a
key every 50 ms while the flood lasts, and reports (a) the slowest key answer, from the press to
the refresh after its action (target < 100 ms), (b) the TUI's peak RSS (target < 150 MB). Then a
fresh process reattaches to the finished run and reports (c) the time from the screen's start
to the log's tail on screen (target < 1 s) and (d) its peak RSS (target < 150 MB). Prints
figures; asserts nothing (shared machines are noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

PROFILE = "h100x8-ubuntu2204-fresh"
FLOOD_STEP = "install-nvidia-driver"
KEY_EVERY_S = 0.05
TARGET_KEY_MS = 100
TARGET_RSS_MB = 150
TARGET_REATTACH_S = 1.0


def prepare(home: Path, megabytes: int, profile: str) -> None:
    """A fresh simulated host whose first `apt-get update` floods, and a reviewed plan."""
    from gpuwizard.core.request import SetupRequest
    from gpuwizard.machine.detect import detect_host
    from gpuwizard.recommend.table import load_table
    from gpuwizard.runner.control import prepare_run
    from gpuwizard.setup.plan import make_plan
    from gpuwizard.sim.backend import sim_backend
    from gpuwizard.sim.sandbox import place_for

    backend = sim_backend(profile, reset=True, home=home)
    rule = {"tool": "apt-get", "match": "update", "times": 1, "flood_mb": megabytes, "exit": 100}
    place_for(profile, home).sandbox.write_json("scenario.json", {"rules": [rule]})
    facts = detect_host(backend.host())
    plan, selection = make_plan(load_table(), facts, SetupRequest())
    prepare_run(backend.state_dir, plan, selection, facts)


def rss_mb() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: Linux carries the parent's peak across
    fork and exec into ru_maxrss, so a child of a large process would report its parent's."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (line,) = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(line.split()[1]) / 1024


async def drive(home: Path, profile: str, attach: bool) -> dict[str, Any]:
    """The measured process: the install screen on the simulated host, driven by key presses."""
    from textual.app import App
    from textual.binding import Binding

    from gpuwizard.runner.control import current
    from gpuwizard.screens.install import InstallView
    from gpuwizard.screens.shell import StageShell
    from gpuwizard.screens.widgets.log_pane import LogPane
    from gpuwizard.setup.effects import Effects
    from gpuwizard.sim.backend import sim_backend

    backend = sim_backend(profile, home=home)
    journal = current(backend.state_dir, None).journal
    assert journal is not None, "no run prepared"
    screen = InstallView(journal.data.plan, Effects(backend), attach=attach)

    class Bench(App[None]):
        BINDINGS: ClassVar = [Binding("k", "ping", "")]

        def __init__(self) -> None:
            super().__init__()
            self.answered: list[float] = []
            self.pushed_at = 0.0

        async def on_mount(self) -> None:
            self.pushed_at = time.perf_counter()
            shell = StageShell()
            await self.push_screen(shell)
            await shell.show(screen)

        def action_ping(self) -> None:
            self.call_after_refresh(lambda: self.answered.append(time.perf_counter()))

    app = Bench()
    async with app.run_test(size=(120, 40)) as pilot:
        if attach:
            return await reattach(pilot, screen, app.pushed_at)
        await pilot.pause()
        pane = screen.query_one(LogPane)
        rss_idle = rss_mb()
        person = Person(app)
        person.start()  # presses keys from its own thread, as a terminal's input does
        await pilot.press("a")
        started = time.perf_counter()
        while screen.mode != "failed" and time.perf_counter() - started < 900:
            await asyncio.sleep(0.1)
        person.stop()
        while len(app.answered) < len(person.sent):
            await asyncio.sleep(0.01)
        latencies = [(a - s) * 1000 for s, a in zip(person.sent, app.answered, strict=True)]
        slowest = sorted(zip(latencies, person.sent, strict=True), reverse=True)[:5]
        return {
            "seconds": time.perf_counter() - started,
            "keys": len(latencies),
            "key_ms_max": max(latencies),
            "key_ms_median": statistics.median(latencies),
            "slowest_keys": [(round(ms), round(sent - started, 2)) for ms, sent in slowest],
            "rss_idle_mb": rss_idle,
            "rss_peak_mb": rss_mb(),
            "pane_lines": len(pane.lines),
            "lines_received": pane.received,
            "left_out": pane.backlog.left_out.lines,
            "failed": screen.mode == "failed",
        }


class Person(threading.Thread):
    """Presses "k" every KEY_EVERY_S through the app's driver, whatever the app is doing."""

    def __init__(self, app: Any) -> None:
        super().__init__(daemon=True)
        self.app = app
        self.sent: list[float] = []
        self.done = threading.Event()

    def run(self) -> None:
        from textual import events

        while not self.done.wait(KEY_EVERY_S):
            key = events.Key("k", "k")
            key.set_sender(self.app)
            self.sent.append(time.perf_counter())
            self.app._driver.send_message(key)

    def stop(self) -> None:
        self.done.set()
        self.join()


async def reattach(pilot: Any, screen: Any, pushed_at: float) -> dict[str, Any]:
    """From the install screen's push to the log's tail drawn on it."""
    from gpuwizard.screens.widgets.log_pane import LogPane

    while not (
        screen.is_mounted
        and any("flood-package" in line for line in screen.query_one(LogPane).lines)
    ):
        assert time.perf_counter() - pushed_at < 60, "the log's tail never showed"
        await asyncio.sleep(0.005)
    shown_at = time.perf_counter()
    pane = screen.query_one(LogPane)
    return {
        "seconds": shown_at - pushed_at,
        "rss_peak_mb": rss_mb(),
        "bytes_read": pane.tail.bytes_read if pane.tail else 0,
    }


def in_child(home: Path, profile: str, attach: bool) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", str(home), "--profile", profile]
    argv += ["--attach"] if attach else []
    env = {**os.environ, "XDG_STATE_HOME": str(home), "GPUWIZARD_SIM_BENCH_PACE": "0"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"flood benchmark child failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(megabytes: int, profile: str = PROFILE) -> dict[str, Any]:
    """One flood of ``megabytes`` and one reattach to it; the figures as a dict."""
    with tempfile.TemporaryDirectory(prefix="bench-flood-") as tmp:
        home = Path(tmp)
        prepare(home, megabytes, profile)
        live = in_child(home, profile, attach=False)
        logs = list(home.glob(f"sim/{profile}/state/logs/*/{FLOOD_STEP}.log"))
        events = next(home.glob(f"sim/{profile}/state/events.jsonl"))
        log_bytes = logs[0].stat().st_size if logs else 0
        again = in_child(home, profile, attach=True)
        return {
            "mb": megabytes,
            "log_bytes": log_bytes,
            "events_bytes": events.stat().st_size,
            "live": live,
            "reattach": again,
        }


def show(result: dict[str, Any]) -> None:
    live, again = result["live"], result["reattach"]
    print(
        f"flood of {result['mb']} MB: log {result['log_bytes'] / 1e6:,.0f} MB, "
        f"events.jsonl {result['events_bytes'] / 1e3:,.0f} kB, {live['seconds']:.1f} s"
    )
    print(
        f"  (a) slowest key answer {live['key_ms_max']:.0f} ms, median "
        f"{live['key_ms_median']:.0f} ms over {live['keys']} keys (target < {TARGET_KEY_MS} ms)"
    )
    slow = ", ".join(f"{ms} ms at {at:+.2f} s" for ms, at in live["slowest_keys"])
    print(f"      slowest keys (time from pressing Run all): {slow}")
    print(
        f"  (b) TUI peak RSS {live['rss_peak_mb']:.0f} MB ({live['rss_idle_mb']:.0f} MB before "
        f"the run; target < {TARGET_RSS_MB} MB)"
    )
    print(
        f"      the pane holds {live['pane_lines']:,} lines; {live['left_out']:,} of "
        f"{live['lines_received']:,} were left out (too fast to read) and counted"
    )
    print(
        f"  (c) reattach: the log's tail on screen in {again['seconds'] * 1000:.0f} ms "
        f"(target < {TARGET_REATTACH_S * 1000:.0f} ms), {again['bytes_read'] / 1024:.0f} KiB read"
    )
    print(f"  (d) reattach peak RSS {again['rss_peak_mb']:.0f} MB (target < {TARGET_RSS_MB} MB)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mb", type=int, action="append", help="flood size; default 200 and 1000")
    parser.add_argument("--profile", default=PROFILE)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--attach", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(drive(args.child, args.profile, args.attach))))
        return 0
    for megabytes in args.mb or [200, 1000]:
        show(measure(megabytes, args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
