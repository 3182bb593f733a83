"""Crashes, full disks and hostile files against the real runner (reliability.md §9, T33-T36,
T38), and the kill loop of issue 3: a runner SIGKILLed at any failpoint and started again never
loses a finished step and never runs a finished step's commands twice.

The kills use the detached runner with GPUWIZARD_FAILPOINTS in its environment alone
(``name=kill@N`` dies at the N-th pass). What counts as "finished" is read from the journal right
after the kill, and every command logged by the stand-in tools afterwards must still have been
due then; the journal must parse as a whole version at every kill.
"""

from __future__ import annotations

import dataclasses
import errno
import itertools
import json
import os
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gpuwizard.core.hints import match as known_error
from gpuwizard.core.ops import MiniforgeInstall
from gpuwizard.core.plan import WriteFile
from gpuwizard.core.request import SetupRequest
from gpuwizard.runner import events as ev
from gpuwizard.runner import journal as journal_module
from gpuwizard.runner.failpoints import ENV as FAILPOINTS
from gpuwizard.runner.files import TEMP_PREFIX
from gpuwizard.runner.journal import FINISHED_STATES, JournalData, parse
from gpuwizard.runner.layout import EXIT_DONE, EXIT_FAILED, EXIT_REBOOT, EXIT_STOPPED, JOURNAL
from gpuwizard.setup.plan import PlanningError
from tests.sim.conftest import H100, SIGKILLED, SimHost, command_key, planned_commands

FAILPOINT_NAMES = (
    "journal.after_save",
    "state.after_tmp_write",
    "state.after_fsync_before_replace",
    "state.after_replace_before_dirsync",
    "executor.before_run",
    "executor.after_run",
    "reboot.after_state_write",
    "reboot.before_cmd",
)
BOOTS = {1: "before the reboot", 2: "after the reboot"}


def without_time(data: JournalData) -> JournalData:
    return dataclasses.replace(data, updated_at="")


def still_due(journal: JournalData) -> Counter[tuple[str, ...]]:
    """Commands a run may still start from this journal: none of a finished step, and of a
    running one only from the action the write-ahead record says may have been half done."""
    due: Counter[tuple[str, ...]] = Counter()
    for planned in journal.plan.steps:
        record = journal.record(planned.id)
        if record.state in FINISHED_STATES:
            continue
        if record.state == "awaiting_reboot" and not planned.reboot:
            continue  # its actions are done; only the boot is awaited
        start = record.next_action if record.state == "running" else 0
        due.update(
            command_key(a.command().argv)
            for a in planned.actions[start:]
            if not isinstance(a, WriteFile)
        )
    return due


def temp_files(*folders: Path) -> list[Path]:
    return [path for folder in folders for path in folder.rglob(f"{TEMP_PREFIX}*")]


# ----------------------------------------------------------------------------- the kill loop
@pytest.fixture(scope="module")
def passes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[int, str], int]:
    """How often a clean H100 install passes each failpoint, per runner launch (1: up to the
    reboot, 2: after it), counted from the trace the failpoints write when armed with sleep(0)."""
    home = tmp_path_factory.mktemp("survey") / "state" / "gpuwizard"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(home.parent))
        host = SimHost(H100, home)
        host.plan()
        trace = ";".join(f"{name}=sleep(0)" for name in FAILPOINT_NAMES)
        counts: dict[tuple[int, str], int] = {}
        codes = []
        for boot in BOOTS:
            start = len(host.runner_log())
            codes.append(host.wait(host.launch(trace)))
            seen = host.runner_log()[start:]
            counts.update(
                {(boot, name): seen.count(f"failpoint {name} hit ") for name in FAILPOINT_NAMES}
            )
        assert host.stop_everything() == []
    assert codes == [SIGKILLED, EXIT_DONE]
    return counts


PASS = {
    "first": lambda total: 1,
    "middle": lambda total: (total + 1) // 2,
    "second to last": lambda total: max(1, total - 1),
    "last": lambda total: total,
}
KILLS = [
    ("journal.after_save", 1, "middle"),
    ("journal.after_save", 1, "second to last"),
    ("journal.after_save", 1, "last"),  # right after the reboot was recorded
    ("journal.after_save", 2, "first"),  # mid-way through verifying what waited for the boot
    ("journal.after_save", 2, "last"),
    ("state.after_tmp_write", 1, "middle"),
    ("state.after_fsync_before_replace", 1, "last"),
    ("state.after_replace_before_dirsync", 1, "second to last"),
    ("state.after_replace_before_dirsync", 2, "middle"),
    ("executor.before_run", 1, "last"),  # before the reboot command itself
    ("executor.before_run", 2, "middle"),
    ("executor.after_run", 1, "middle"),  # a command done, its record not yet written
    ("executor.after_run", 2, "first"),
]
"""(failpoint, runner launch, which pass): spread over the install; reboot.* are T05's."""


@pytest.mark.parametrize(
    ("failpoint", "boot", "which"),
    [pytest.param(*kill, id=f"{kill[0]}, {kill[2]} pass {BOOTS[kill[1]]}") for kill in KILLS],
)
def test_a_kill_at_any_failpoint_loses_no_finished_step_and_repeats_no_finished_command(
    sim, passes, failpoint, boot, which
):
    hit = PASS[which](passes[(boot, failpoint)])
    host = sim(H100)
    plan = host.plan()
    for _ in range(boot - 1):
        assert host.wait(host.launch()) == SIGKILLED  # ended by the fake reboot

    assert host.wait(host.launch(f"{failpoint}=kill@{hit}")) == SIGKILLED
    assert f"failpoint {failpoint} hit {hit}: kill" in host.runner_log()
    at_kill = host.journal()  # T33: whole, parsed strictly, without the backup
    finished = {r.id for r in at_kill.steps if r.state in FINISHED_STATES}
    killed_at, seen = len(host.calls()), len(host.events())

    codes = host.finish()

    assert codes[-1] == EXIT_DONE, host.runner_log()[-2000:]
    assert not host.commands(since=killed_at) - still_due(at_kill), "a finished command ran again"
    extra = host.commands() - planned_commands(plan)
    assert sum(extra.values()) <= 1, f"only the interrupted action may run twice: {extra}"
    restarted = {e.step for e in host.events()[seen:] if isinstance(e, ev.StepStarted)}
    assert not restarted & finished, "a finished step was started again"
    assert set(host.step_states().values()) <= set(FINISHED_STATES)
    assert temp_files(host.state_dir, host.sandbox.root) == [], "stale temp files were left"
    parse((host.state_dir / f"{JOURNAL}.bak").read_text())


@pytest.mark.slow
@pytest.mark.parametrize(
    "every",
    [
        pytest.param(
            "executor.before_run=kill@2", id="killed before its second command, every launch"
        ),
        pytest.param(
            "journal.after_save=kill@2", id="killed after its second journal save, every launch"
        ),
    ],
)
def test_a_runner_killed_again_and_again_still_installs_and_runs_each_command_once(sim, every):
    host = sim(H100)
    plan = host.plan()

    codes = []
    while len(codes) < 60 and EXIT_DONE not in codes:
        codes.append(host.wait(host.launch(every)))

    assert codes[-1] == EXIT_DONE
    assert len(codes) >= 8, "it really was killed again and again"
    assert host.commands() == planned_commands(plan)
    assert host.journal().finished


# ------------------------------------------------------------------------------------ T33
SAVE_ONE_CHANGE = (
    "import sys\n"
    "from pathlib import Path\n"
    "from gpuwizard.runner.journal import Journal\n"
    "Journal.load(Path(sys.argv[1])).update('create-env', state='running', attempts=1)\n"
)


@pytest.mark.parametrize(
    ("failpoint", "leaves"),
    [
        pytest.param("state.after_tmp_write", "old", id="after the temp write: old"),
        pytest.param("state.after_fsync_before_replace", "old", id="after its fsync: old"),
        pytest.param("state.after_replace_before_dirsync", "new", id="after the replace: new"),
        pytest.param("journal.after_save", "new", id="after the save: new"),
    ],
)
def test_t33_a_kill_during_a_journal_save_leaves_exactly_the_old_or_the_new_journal(
    sim, failpoint, leaves
):
    host = sim(H100)
    host.plan()
    assert host.run() == EXIT_REBOOT
    path = host.state_dir / JOURNAL
    old = host.journal()
    new = dataclasses.replace(
        old,
        steps=tuple(
            dataclasses.replace(r, state="running", attempts=1) if r.id == "create-env" else r
            for r in old.steps
        ),
    )

    saving = subprocess.run(
        [sys.executable, "-c", SAVE_ONE_CHANGE, str(path)],
        env={**os.environ, FAILPOINTS: f"{failpoint}=kill"},
        check=False,
    )

    assert saving.returncode == SIGKILLED
    assert without_time(host.journal()) == without_time(old if leaves == "old" else new)
    assert bool(temp_files(host.state_dir)) == (leaves == "old"), (
        "the temp file is the torn new one"
    )
    assert (host.state_dir / f"{JOURNAL}.bak").exists()
    assert host.run() == EXIT_REBOOT, "the next start resumes"
    assert temp_files(host.state_dir) == [], "and removes the stale temp file"


# ------------------------------------------------------------------------------------ T34
def test_t34_a_full_disk_during_a_save_stops_the_run_with_the_error_and_runs_nothing_unrecorded(
    sim, monkeypatch
):
    host = sim(H100)
    host.plan()
    real_write = journal_module.write_atomic
    saves = itertools.count(1)

    def disk_fills_up(
        path: Path, data: bytes, mode: int = 0o600, backup: Path | None = None
    ) -> None:
        if next(saves) >= 12:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real_write(path, data, mode, backup)

    monkeypatch.setattr(journal_module, "write_atomic", disk_fills_up)

    assert host.run() == EXIT_FAILED

    stopped = host.events_of(ev.RunStopped)[-1]
    assert "No space left on device" in stopped.why
    assert "stopping before anything else runs" in stopped.why
    on_disk = host.journal()
    recorded: Counter[tuple[str, ...]] = Counter()
    for planned in on_disk.plan.steps:
        record = on_disk.record(planned.id)
        started = len(planned.actions) if record.state != "running" else record.next_action + 1
        if record.state in ("pending", "skipped"):
            started = 0
        recorded.update(
            command_key(a.command().argv)
            for a in planned.actions[:started]
            if not isinstance(a, WriteFile)
        )
    assert not host.commands() - recorded, (
        "a command ran that the journal on disk does not announce"
    )

    monkeypatch.setattr(journal_module, "write_atomic", real_write)  # space again
    assert host.run() == EXIT_REBOOT


# ------------------------------------------------------------------------------------ T35
def damaged(text: str, how: str) -> bytes:
    data = json.loads(text)
    return {
        "empty": b"",
        "truncated": text[: len(text) // 2].encode(),
        "random bytes": b"\x89PNG\r\n\x1a\n\x00\xff\xfe\x00garbage",
        "wrong types": json.dumps({**data, "steps": "all done"}).encode(),
        "schema 999": json.dumps({**data, "schema": 999}).encode(),
        "a YAML code tag": b"!!python/object/new:os.system [touch t35-canary]\n",
        "a duplicate key": text.replace(
            '"finished": false', '"finished": false, "finished": true'
        ).encode(),
        "20 MiB": (text + " " * (20 * 1024 * 1024)).encode(),
    }[how]


@pytest.mark.parametrize(
    "how",
    [
        "empty",
        "truncated",
        "random bytes",
        "wrong types",
        "schema 999",
        "a YAML code tag",
        "a duplicate key",
        "20 MiB",
    ],
)
def test_t35_a_damaged_journal_falls_back_to_its_backup_and_reruns_no_finished_step(
    sim, tmp_path, how
):
    host = sim(H100)
    host.plan()
    assert host.run() == EXIT_REBOOT
    path = host.state_dir / JOURNAL
    backup = parse((host.state_dir / f"{JOURNAL}.bak").read_text())
    calls = len(host.calls())
    path.write_bytes(damaged(path.read_text(), how))

    assert host.run() == EXIT_REBOOT  # resumed from the backup: offers the same reboot

    assert len(host.calls()) == calls, "nothing finished ran again"
    resumed = host.journal()
    assert resumed.run_id == backup.run_id
    assert not resumed.finished
    assert {r.id: r.state for r in resumed.steps} == {r.id: r.state for r in backup.steps} | {
        "reboot": "awaiting_reboot"
    }
    assert not list(tmp_path.rglob("t35-canary")), "no code in the file ran"


def test_t35_a_damaged_journal_without_a_usable_backup_is_refused_and_never_reset(sim):
    host = sim(H100)
    host.plan()
    assert host.run() == EXIT_REBOOT
    files = [host.state_dir / JOURNAL, host.state_dir / f"{JOURNAL}.bak"]
    for file in files:
        file.write_bytes(b'{"schema": 1, "run_id": ')
    calls = len(host.calls())

    assert host.run() == EXIT_STOPPED

    assert "has no usable backup" in (host.state_dir / "runner-error.txt").read_text()
    assert [file.read_bytes() for file in files] == [b'{"schema": 1, "run_id": '] * 2
    assert len(host.calls()) == calls
    refused = host.cli("apply", "--yes")
    assert refused.returncode == 2
    assert "is damaged" in refused.stderr and "nothing runs" in refused.stderr


# ------------------------------------------------------------------------------------ T36
@pytest.mark.parametrize(
    "name",
    [
        "$(touch pwn-canary)",
        "`touch pwn-canary`",
        "; rm -rf ~",
        "my env",
        "-rf",
        "a\nb",
        "a\x00b",
        "ümlaut",
        "x" * 4096,
    ],
    ids=[
        "$()",
        "backtick",
        "; rm -rf ~",
        "a space",
        "a leading dash",
        "a newline",
        "a NUL",
        "non-ASCII",
        "4096 bytes",
    ],
)
def test_t36_a_hostile_environment_name_is_refused_before_anything_is_planned_or_run(
    sim, tmp_path, name
):
    host = sim(H100)

    with pytest.raises(PlanningError, match="environment name"):
        host.plan(SetupRequest(env_name=name))

    assert not (host.state_dir / JOURNAL).exists()
    assert host.calls() == []
    assert not list(tmp_path.rglob("pwn-canary"))


# ------------------------------------------------------------------------------------ T38
@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(
            "SHA-256 mismatch: got 1f2e, expected 9c8b; the file was deleted and not used",
            id="checksum",
        ),
        pytest.param(
            "download ended early: 1048576 of 2097152 bytes", id="cut off halfway (curl 18)"
        ),
    ],
)
def test_t38_a_download_that_fails_its_check_is_never_run(sim, failure):
    host = sim(H100)
    host.scenario(
        rules=[
            {
                "tool": "gpuwizard-fetch",
                "match": "Miniforge",
                "exit": 1,
                "output": f"gpuwizard-fetch: {failure}",
            }
        ]
    )
    plan = host.plan(SetupRequest(env_kind="conda"))
    assert any(isinstance(a, MiniforgeInstall) for a in plan.step("create-env").actions)

    assert host.install() == [EXIT_REBOOT, EXIT_FAILED]

    assert host.step_states()["create-env"] == "failed"
    assert not any(call.tool in ("bash", "conda") for call in host.calls()), (
        "the installer never ran"
    )
    assert not any(host.path("/var/cache/gpuwizard").rglob("Miniforge*"))
    if "SHA-256" in failure:
        lines = [
            line for e in host.events_of(ev.LogLines) if e.step == "create-env" for line in e.lines
        ]
        assert known_error(lines).id == "checksum"


def test_t38_state_and_logs_are_private_whatever_the_umask_and_apt_keys_are_signed_by(sim):
    host = sim(H100)
    previous = os.umask(0)
    try:
        host.plan(SetupRequest(docker=True))
        assert host.finish() == [SIGKILLED, EXIT_DONE]
    finally:
        os.umask(previous)

    assert stat.S_IMODE(host.state_dir.stat().st_mode) == 0o700
    loose = {
        str(path.relative_to(host.state_dir)): oct(stat.S_IMODE(path.stat().st_mode))
        for path in host.state_dir.rglob("*")
        if stat.S_IMODE(path.stat().st_mode) & (0o077 if path.is_dir() else 0o037)
    }
    assert loose == {}, "readable or writable by others"
    sources = list(host.path("/etc/apt/sources.list.d").glob("*.list"))
    assert sources and all("signed-by=" in source.read_text() for source in sources)
    assert not any(call.tool == "apt-key" for call in host.calls())
