"""The pexpect driver against fake programs: streaming, prompts, secrets, clocks, exit status.

Fault ids (T17, T25-T32) are the cases in shared/knowledge/reliability.md §9.
"""

from __future__ import annotations

import math
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from secrets import token_hex
from typing import Any

import pexpect
import pytest

from gpuwizard.core.plan import SecretRef
from gpuwizard.runner.pty import Answer, CommandError, RunResult, run_command
from gpuwizard.runner.ptytext import MASK
from tests.fakes.talker import CONFFILE_PROMPT, FLOOD_LINE_BYTES

FAKES = Path(__file__).parents[1] / "fakes"
TALKER = str(FAKES / "talker.py")
SUDO = str(FAKES / "sudo.py")
ENV = {
    "PATH": os.environ.get("PATH", os.defpath),
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
}
# T25: quotes, $(), a backslash and non-ASCII; a shell anywhere on its path would run `touch x`.
CANARY = "ca\"n'a$(touch x)\\ry-ü密"


@dataclass
class Ran:
    result: RunResult
    raw: bytes
    lines: list[str]
    calls: int


def run(tmp_path: Path, *argv: str, env: dict[str, str] | None = None, **kwargs: Any) -> Ran:
    log_path = tmp_path / "step.log"
    batches: list[list[str]] = []
    with log_path.open("wb") as log:
        result = run_command(
            argv, env={**ENV, **(env or {})}, log=log, on_lines=batches.append, **kwargs
        )
    return Ran(
        result, log_path.read_bytes(), [line for batch in batches for line in batch], len(batches)
    )


def talk(tmp_path: Path, *mode: str, **kwargs: Any) -> Ran:
    return run(tmp_path, sys.executable, TALKER, *mode, **kwargs)


def is_gone(pid: int) -> bool:
    """No such process, or only a zombie left for a reaper that may never come (a container's PID 1)."""
    try:
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def pids_in(lines: list[str]) -> dict[str, int]:
    return {
        line.split()[0]: int(line.split()[1])
        for line in lines
        if re.fullmatch(r"(grand)?child \d+", line)
    }


def sudo_prompt() -> str:
    # T27: a unique token per run, as Ansible's become plugin does; never a bare "Password:".
    return f"[sudo via gpuwizard, key={token_hex(8)}] password:"


def sudo_answer(prompt: str) -> Answer:
    return Answer(
        re.compile(re.escape(prompt) + r"\s*$"),
        SecretRef("sudo-password", "Your password for sudo"),
    )


class FakePerson:
    """A SecretSource that types the given replies (the last one again when they run out)."""

    def __init__(self, *replies: str, log_path: Path | None = None) -> None:
        self.replies = replies
        self.asked: list[tuple[SecretRef, str]] = []
        self.log_path = log_path
        self.log_when_asked: list[bytes] = []

    def __call__(self, ref: SecretRef, prompt_text: str) -> str:
        self.asked.append((ref, prompt_text))
        if self.log_path is not None:
            self.log_when_asked.append(self.log_path.read_bytes())
        return self.replies[min(len(self.asked), len(self.replies)) - 1]


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, dict[str, Any]]]:
    """Every pexpect.spawn the driver makes, with its keyword arguments."""
    calls: list[tuple[Any, dict[str, Any]]] = []
    real_spawn = pexpect.spawn

    def spy(*args: Any, **kwargs: Any) -> Any:
        child = real_spawn(*args, **kwargs)
        calls.append((child, kwargs))
        return child

    monkeypatch.setattr(pexpect, "spawn", spy)
    return calls


# ---------------------------------------------------------------- streaming


def test_output_streams_raw_to_the_log_and_as_lines_to_the_display(tmp_path):
    ran = talk(tmp_path, "lines", "3")
    assert ran.result.ok and ran.result.describe() == "exited 0"
    assert ran.lines == ["line 0", "line 1", "line 2"]
    assert ran.raw == b"line 0\r\nline 1\r\nline 2\r\n"  # the pty's own CRLF, kept raw
    assert ran.result.bytes_out == len(ran.raw)
    assert ran.result.last_lines == ("line 0", "line 1", "line 2")


def test_t25_spawns_in_bytes_mode_with_no_logfile_of_any_kind(tmp_path, spawned):
    talk(tmp_path, "lines", "1")
    [(child, kwargs)] = spawned
    assert (child.logfile, child.logfile_read, child.logfile_send) == (None, None, None)
    assert not {"logfile", "logfile_read", "logfile_send"} & kwargs.keys()
    assert kwargs["encoding"] is None and kwargs["echo"] is False
    assert (kwargs["maxread"], kwargs["dimensions"], kwargs["env"]) == (65536, (50, 200), ENV)


def test_the_environment_is_exactly_env_with_nothing_inherited(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUWIZARD_TEST_INHERITED", "1")
    ran = talk(tmp_path, "env")
    assert "GPUWIZARD_TEST_INHERITED" not in ran.lines
    assert set(ENV) <= set(ran.lines)


def test_on_lines_gets_batches_not_one_call_per_line(tmp_path):
    ran = talk(tmp_path, "lines", "20000")
    assert ran.lines == [f"line {i}" for i in range(20000)]
    assert ran.calls <= 200
    assert ran.result.last_lines == tuple(f"line {i}" for i in range(19980, 20000))


def test_the_log_is_flushed_while_the_command_runs(tmp_path):
    log_path = tmp_path / "live.log"
    seen: list[bytes] = []
    timer = threading.Timer(0.6, lambda: seen.append(log_path.read_bytes()))
    with log_path.open("wb") as log:  # buffered: only a flush puts the bytes on disk
        timer.start()
        result = run_command([sys.executable, TALKER, "lines-then-sleep", "1"], env=ENV, log=log)
    timer.join()
    assert result.ok
    assert b"first line" in seen[0] and b"done" not in seen[0]


def test_t29_bad_bytes_split_characters_ansi_and_progress_are_cleaned_for_display_only(tmp_path):
    ran = talk(tmp_path, "bytes")
    assert ran.result.ok
    assert ran.lines == ["bad:\ufffd\ufffd:end", "split:ü:end", "100%", "red plain done", "nul:ab"]
    for raw in (
        b"\xff\xfe",
        b"split:\xc3\xbc",
        b"10%\r50%\r100%",
        b"\x1b[31m",
        b"\x1b]0;title\x07",
        b"a\x00b",
    ):
        assert raw in ran.raw


def test_t28_a_flood_reaches_the_log_whole_with_few_callbacks_and_wrapped_long_lines(tmp_path):
    ran = talk(tmp_path, "flood", "4", "1")
    count, long_line = 4_000_000 // FLOOD_LINE_BYTES, 1_000_000
    assert ran.result.ok
    assert ran.result.bytes_out == len(ran.raw) == count * (FLOOD_LINE_BYTES + 1) + long_line
    assert len(ran.lines) == count + math.ceil(long_line / 65536)
    assert ran.lines[count - 1].startswith(f"{count - 1:09d} xxx")
    assert "".join(ran.lines[count:]) == "y" * long_line
    assert ran.calls <= len(ran.lines) // 100


# ---------------------------------------------------------------- prompts and secrets


def test_each_prompt_occurrence_is_answered_exactly_once(tmp_path):
    ran = talk(tmp_path, "prompt-then-read", "2", answers=[Answer(re.compile(r"\[y/N\] $"), "y")])
    assert ran.result.ok, ran.lines  # exit 3 would mean a reply nobody asked for
    assert sum("got 'y'" in line for line in ran.lines) == 2


def test_t25_canary_password_never_appears_and_sudo_authenticates(tmp_path):
    prompt, person = sudo_prompt(), FakePerson(CANARY)
    ran = run(
        tmp_path, sys.executable, SUDO, "-p", prompt,
        env={"FAKE_SUDO_PASSWORD": CANARY}, answers=[sudo_answer(prompt)], secrets=person, cwd=str(tmp_path),
    )  # fmt: skip
    assert ran.result.ok, ran.result.describe()
    assert "authenticated" in ran.lines
    assert [(ref.name, text) for ref, text in person.asked] == [("sudo-password", prompt)]
    shown = [*ran.lines, *ran.result.last_lines]
    for leak in (CANARY, "touch x", "ü密"):
        assert leak.encode() not in ran.raw
        assert not any(leak in line for line in shown)
    # waitnoecho held the reply until echo was off, so there was not even an echo to mask.
    assert MASK.encode() not in ran.raw
    assert not (tmp_path / "x").exists()


def test_t25_an_echoed_secret_is_masked_in_log_and_lines_even_split_across_reads(tmp_path):
    person = FakePerson(CANARY)
    answer = Answer(
        re.compile(r"Secret: $"), SecretRef("mok-password", "A password for MOK enrollment")
    )
    ran = talk(tmp_path, "echo-password", answers=[answer], secrets=person)
    assert ran.result.ok
    assert CANARY.encode() not in ran.raw and b"touch" not in ran.raw
    assert b"you typed: ******** (that was it)" in ran.raw
    assert "you typed: ******** (that was it)" in ran.lines
    assert not any("touch" in line for line in ran.lines)


def test_the_log_is_flushed_before_a_person_is_asked_for_a_secret(tmp_path):
    person = FakePerson(CANARY, log_path=tmp_path / "step.log")
    answer = Answer(
        re.compile(r"Secret: $"), SecretRef("mok-password", "A password for MOK enrollment")
    )
    assert talk(tmp_path, "echo-password", answers=[answer], secrets=person).result.ok
    assert person.log_when_asked == [b"Secret: "]


def test_t26_a_wrong_password_is_asked_three_times_then_fails_cleanly(tmp_path):
    prompt, person = sudo_prompt(), FakePerson("not-the-password")
    ran = run(
        tmp_path, sys.executable, SUDO, "-p", prompt,
        env={"FAKE_SUDO_PASSWORD": CANARY, "FAKE_SUDO_ECHO_DELAY_MS": "0"},
        answers=[sudo_answer(prompt)], secrets=person, silence_timeout_s=5,
    )  # fmt: skip
    assert len(person.asked) == 3
    assert (ran.result.exit_status, ran.result.signal, ran.result.timed_out) == (1, None, None)
    assert ran.lines.count("Sorry, try again.") == 2
    assert ran.result.last_lines[-1] == "sudo: 3 incorrect password attempts"
    assert b"not-the-password" not in ran.raw


def test_t26_sudo_n_fails_fast_instead_of_waiting_for_a_password(tmp_path):
    prompt, person = sudo_prompt(), FakePerson(CANARY)
    ran = run(
        tmp_path, sys.executable, SUDO, "-n", "-p", prompt, "true",
        answers=[sudo_answer(prompt)], secrets=person, silence_timeout_s=5,
    )  # fmt: skip
    assert ran.result.exit_status == 1 and person.asked == []
    assert ran.lines == ["sudo: a password is required"]
    assert ran.result.duration_s < 2


def test_t27_a_generic_password_line_is_not_answered_only_the_unique_sudo_prompt(tmp_path):
    prompt, person = sudo_prompt(), FakePerson(CANARY)
    ran = run(
        tmp_path, sys.executable, SUDO, "-p", prompt, sys.executable, TALKER, "password-in-output",
        env={"FAKE_SUDO_PASSWORD": CANARY}, answers=[sudo_answer(prompt)], secrets=person,
    )  # fmt: skip
    assert ran.result.ok, ran.result.describe()
    assert [text for _, text in person.asked] == [prompt]
    assert "Password:" in [line.strip() for line in ran.lines]


def test_t17_without_answers_stdin_is_null_so_a_conffile_prompt_reads_eof(tmp_path):
    ran = talk(tmp_path, "conffile-prompt", silence_timeout_s=10)
    assert (ran.result.exit_status, ran.result.timed_out) == (1, None)
    assert any("end of file on stdin at conffile prompt" in line for line in ran.lines)
    assert ran.result.duration_s < 5


def test_t17_a_prompt_still_waiting_on_stdin_is_shown_when_the_watchdog_fires(tmp_path):
    ran = talk(tmp_path, "conffile-prompt", stdin_null=False, silence_timeout_s=1)
    assert ran.result.timed_out == "silence" and not ran.result.ok
    assert ran.result.last_lines[-1] == CONFFILE_PROMPT
    assert ran.result.describe() == f"no output for 1 s; last line: {CONFFILE_PROMPT.strip()!r}"


# ---------------------------------------------------------------- clocks, signals, exit status


def test_t30_silent_child_is_killed_with_its_process_group(tmp_path):
    ran = talk(tmp_path, "grandchild", silence_timeout_s=1)
    pids = pids_in(ran.lines)
    assert ran.result.timed_out == "silence"
    assert (ran.result.exit_status, ran.result.signal) == (None, signal.SIGTERM)
    assert "(Y/I/N/O/D/Z) [default=N] ?" in ran.result.describe()
    assert is_gone(pids["child"]) and is_gone(pids["grandchild"])
    assert 1 <= ran.result.duration_s < 3.5


@pytest.mark.slow
def test_t30_a_child_ignoring_sigterm_gets_sigkill_after_the_grace_period(tmp_path):
    ran = talk(tmp_path, "ignore-term", silence_timeout_s=0.5)
    assert ran.result.timed_out == "silence"
    assert (ran.result.exit_status, ran.result.signal) == (None, signal.SIGKILL)
    assert is_gone(pids_in(ran.lines)["child"])
    assert ran.result.duration_s >= 2.5


def test_the_deadline_stops_a_command_that_keeps_talking(tmp_path):
    ran = talk(tmp_path, "tick", timeout_s=1, silence_timeout_s=10)
    assert ran.result.timed_out == "deadline"
    assert ran.result.describe() == "timed out after 1 s"
    assert ran.lines[:2] == ["tick 0", "tick 1"]


def test_t31_a_child_killed_by_sigkill_reports_the_signal_never_an_exit_status(tmp_path):
    ran = talk(tmp_path, "sigkill")
    assert (ran.result.exit_status, ran.result.signal) == (None, 9)
    assert not ran.result.ok
    assert ran.result.describe() == "killed by SIGKILL"


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        pytest.param(
            ("/bin/sh", "-c", "echo bye; exit 137"),
            137,
            id="exit 137 from a shell is just an exit status",
        ),
        pytest.param((sys.executable, TALKER, "exit", "100"), 100, id="apt's exit 100"),
        pytest.param((sys.executable, TALKER, "exit", "0"), 0, id="success"),
    ],
)
def test_t31_the_exit_status_comes_from_reaping_the_child(tmp_path, argv, status):
    ran = run(tmp_path, *argv)
    assert (ran.result.exit_status, ran.result.signal, ran.result.timed_out) == (status, None, None)
    assert ran.result.describe() == f"exited {status}"
    assert ran.result.ok == (status == 0)


def test_t32_the_pty_is_200_columns_wide(tmp_path):
    assert talk(tmp_path, "winsize").lines == ["columns=200 lines=50"]


# ---------------------------------------------------------------- refused before spawning


def test_t32_a_missing_cwd_is_refused_before_spawning(tmp_path, spawned):
    started = time.monotonic()
    with pytest.raises(CommandError, match=r"working directory .*missing does not exist"):
        talk(tmp_path, "lines", "1", cwd=str(tmp_path / "missing"))
    assert spawned == []
    assert time.monotonic() - started < 1


@pytest.mark.parametrize(
    ("argv", "path", "message"),
    [
        pytest.param((), ENV["PATH"], "empty command", id="empty argv"),
        pytest.param(
            ("no-such-tool-gpuwizard",), ENV["PATH"], "not found on PATH", id="a name not on PATH"
        ),
        pytest.param(
            ("sh", "-c", "true"),
            "/nonexistent",
            "not found on PATH '/nonexistent'",
            id="PATH from env, not os.environ",
        ),
        pytest.param(
            ("./no-such-file",),
            ENV["PATH"],
            "no such executable file",
            id="a path that does not exist",
        ),
    ],
)
def test_a_command_that_cannot_run_is_refused_before_spawning(
    tmp_path, spawned, argv, path, message
):
    with pytest.raises(CommandError, match=re.escape(message)):
        run(tmp_path, *argv, env={"PATH": path})
    assert spawned == []


def test_a_secret_answer_without_a_secret_source_is_refused_before_spawning(tmp_path, spawned):
    with pytest.raises(CommandError, match="no secret source"):
        talk(
            tmp_path, "echo-password", answers=[Answer(re.compile("Secret: "), SecretRef("x", "X"))]
        )
    assert spawned == []


# ---------------------------------------------------------------- describe


@pytest.mark.parametrize(
    ("result", "text"),
    [
        pytest.param(RunResult(0, None, None, 1.0, 5, ("ok",)), "exited 0", id="success"),
        pytest.param(RunResult(100, None, None, 1.0, 5, ("E: x",)), "exited 100", id="failure"),
        pytest.param(RunResult(None, 9, None, 1.0, 5, ()), "killed by SIGKILL", id="signal"),
        pytest.param(
            RunResult(
                None,
                15,
                "silence",
                600.3,
                5,
                ("Reading...", "Do you want to continue? [Y/n] "),
                600.0,
            ),
            "no output for 600 s; last line: 'Do you want to continue? [Y/n]'",
            id="silence shows the prompt",
        ),
        pytest.param(
            RunResult(None, 15, "silence", 1.2, 0, (), 1.0),
            "no output for 1 s; it printed nothing",
            id="silence, nothing printed",
        ),
        pytest.param(
            RunResult(None, 15, "deadline", 3600.4, 5, ("x",), 3600.0),
            "timed out after 3600 s",
            id="deadline",
        ),
    ],
)
def test_describe_says_how_the_command_ended(result, text):
    assert result.describe() == text
    assert result.ok == (text == "exited 0")
