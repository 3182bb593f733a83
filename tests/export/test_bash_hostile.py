"""Hostile values in every part of a plan that reaches deploy.sh: the script stays valid bash,
runs them as plain data (the tool receives exactly the value, the file holds exactly the bytes)
and never executes them; what bash cannot carry in a path is refused in one line.

Values a person can influence reach the script as environment paths and names (in argv and in
paths), file contents and paths, argv elements, environment values, `creates` paths, replies to
prompts, and the titles and summary lines shown in comments and messages.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpuwizard.core.ops import Command, Download, NoPin
from gpuwizard.core.plan import SecretRef, StepPlan, WriteFile
from gpuwizard.export.bash import render_bash
from gpuwizard.export.source import ExportError, ExportSource
from gpuwizard.export.words import one_line
from tests.export.deploy_harness import Deploy, source_with

SHELLCHECK = str(Path(sys.executable).parent / "shellcheck")
NASTY = (
    "'", '"', "$(touch pwned)", "`touch pwned`", "${PATH}", "$HOME", "$'\\n'", " ", "\t", "\n", "\r",
    "\\", "\\'", "'\\", "-", "--", "-rf", "--help", "é", "密", "😀", "#", ";", "&&", "|", "<", ">",
    "*", "?", "!", "~", "{a,b}", "GPUWIZARD_EOF", "\x1b[31m", "\x7f", "\u2028", "\x85", "=",
)  # fmt: skip
PLAIN = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\0"), max_size=4
)
HOSTILE = st.lists(st.sampled_from(NASTY) | PLAIN, max_size=6).map("".join)
NAME = HOSTILE.filter(
    lambda s: s not in ("", ".", "..") and not {"/", "\n", "\0"} & set(s) and len(s.encode()) <= 120
)
"""One path component: anything but a slash, a newline or NUL."""
SLOW = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""Each example starts bash (and some a few fake tools)."""


def hostile_source(
    title: str, args: list[str], value: str, name: str, content: str, reply: str
) -> ExportSource:
    steps = [
        StepPlan(
            "hostile",
            title,
            f"why: {title}",
            (
                Command(
                    ("fake-tool", *args), env={"GW_TEST_VALUE": value}, creates=f"/missing/{name}"
                ),
                WriteFile(f"/files/{name}", content, 0o640),
                Command(
                    ("other-tool", *args),
                    answers={"reply:": reply, "secret:": SecretRef("pw", f"prompt {title}")},
                ),
            ),
        )
    ]
    return source_with(steps, summary=(title, value))


@settings(SLOW, max_examples=150)
@given(
    title=HOSTILE, args=st.lists(HOSTILE, max_size=4), value=HOSTILE, name=NAME, content=HOSTILE,
    reply=HOSTILE,
)  # fmt: skip
def test_hostile_values_keep_deploy_sh_valid_bash(title, args, value, name, content, reply):
    script = render_bash(hostile_source(title, args, value, name, content, reply))
    checked = subprocess.run(
        ["bash", "-n"], input=script.encode(), capture_output=True, check=False
    )
    assert checked.returncode == 0, checked.stderr.decode(errors="replace")


@settings(SLOW, max_examples=12)
@given(title=HOSTILE, args=st.lists(HOSTILE, max_size=3), value=HOSTILE, name=NAME, content=HOSTILE)
@example(title="", args=[], value="", name="'", content=" GPUWIZARD_EOF")  # SC1039, found here
@example(title="", args=[], value="", name="n", content="GPUWIZARD_EOF \nGPUWIZARD_EOF_1")
def test_hostile_values_stay_shellcheck_clean(title, args, value, name, content):
    script = render_bash(hostile_source(title, args, value, name, content, reply="yes"))
    lint = subprocess.run(
        [SHELLCHECK, "--severity=style", "-"],
        input=script.encode(),
        capture_output=True,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout.decode(errors="replace")


@settings(SLOW, max_examples=25)
@given(
    title=HOSTILE, args=st.lists(HOSTILE, max_size=4), value=HOSTILE, name=NAME, content=HOSTILE,
    reply=HOSTILE,
)  # fmt: skip
def test_hostile_values_reach_the_tool_and_the_file_exactly(
    title, args, value, name, content, reply
):
    with tempfile.TemporaryDirectory() as folder:
        machine = Deploy(Path(folder))
        machine.write_script(hostile_source(title, args, value, name, content, reply))
        result = machine.run(env={"GPUWIZARD_SECRET_PW": "s3cret"})

        assert result.code == 0, result.output
        calls = machine.calls()
        assert [c["argv"] for c in calls] == [["fake-tool", *args], ["other-tool", *args]]
        assert calls[0]["env"] == {"GW_TEST_VALUE": value}
        replies = f"{reply}\ns3cret\n".encode()
        assert calls[1]["stdin_sha256"] == hashlib.sha256(replies).hexdigest()
        written = machine.path(f"/files/{name}")
        assert written.read_bytes() == content.encode()
        assert written.stat().st_mode & 0o777 == 0o640
        assert f"==> [1/1] {one_line(title)}\n" in result.output
        assert machine.markers() == ["hostile.done"]
        assert not list(Path(folder).rglob("pwned")), "a value was executed"
        assert machine.run().code == 0
        assert len(machine.calls()) == 2, "the rerun skipped the finished step"


@settings(SLOW, max_examples=60)
@given(
    before=HOSTILE, bad=st.sampled_from(["\n", "\0"]), after=HOSTILE,
    kind=st.sampled_from(["write", "creates", "fetch"]),
)  # fmt: skip
def test_a_path_with_nul_or_newline_is_refused_with_a_one_line_message(before, bad, after, kind):
    path = f"/{before}{bad}{after}"
    action = {
        "write": WriteFile(path, "x"),
        "creates": Command(("fake-tool",), creates=path),
        "fetch": Download("https://example.com/x", path, NoPin()),
    }[kind]
    with pytest.raises(ExportError) as refused:
        render_bash(source_with([StepPlan("bad", "Bad", "why", (action,))]))
    message = str(refused.value)
    assert message.startswith("step bad: ")
    assert "\n" not in message
    assert "\0" not in message


LONG_PATH = "/opt/" + "/".join(["d" * 200] * 20)  # 4,025 bytes: a path, not a file to make
T36_VALUES = (
    "/opt/my env", "/opt/$(touch pwn-canary)", "/opt/; rm -rf ~", "/opt/`touch pwn-canary`",
    "-rf", "/opt/-leading", "/opt/ünï-密", LONG_PATH,
)  # fmt: skip


@pytest.mark.parametrize("value", T36_VALUES, ids=lambda v: repr(v)[:30])
def test_t36_hostile_paths_are_quoted_executed_as_data_and_never_run(value: str) -> None:
    """reliability.md T36: the values of the fault case reach deploy.sh's tool, environment and
    files exactly, bash -n and shellcheck pass, and the canary is never created."""
    name = value.rsplit("/", 1)[-1][:100] or "x"
    with tempfile.TemporaryDirectory() as folder:
        machine = Deploy(Path(folder))
        script = machine.write_script(hostile_source(value, [value], value, name, value, value))
        assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
        lint = subprocess.run([SHELLCHECK, str(script)], capture_output=True, check=False)
        assert lint.returncode == 0, lint.stdout.decode(errors="replace")

        result = machine.run(env={"GPUWIZARD_SECRET_PW": "s3cret"})

        assert result.code == 0, result.output
        calls = machine.calls()
        assert calls[0]["argv"] == ["fake-tool", value] and calls[0]["env"] == {
            "GW_TEST_VALUE": value
        }
        assert machine.path(f"/files/{name}").read_text() == value
        assert not list(Path(folder).rglob("pwn-canary")), "a value was executed"
