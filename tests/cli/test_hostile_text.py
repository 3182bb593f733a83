"""Text the machine, a log or an answers file wrote never reaches the terminal raw (issue 19).

A recorded host whose os-release, CPU name and kernel log carry terminal escapes (an OSC 52
clipboard write, an OSC 8 hyperlink, a title change, CSI 2J), a bell and U+202E; a training log
and an answers file with the same: no command's output holds a control or format character
other than newline and tab, and what the text said is still there, cleaned.
"""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pytest

from gpuwizard.export.answers import render_answers
from gpuwizard.frontends.cli import main
from gpuwizard.runner.session import banner_text
from gpuwizard.sim import profiles
from tests.export.conftest import source_for

ESCAPES = (
    "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: write to the clipboard
    "\x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\"  # OSC 8: a hyperlink
    "\x1b]0;pwned title\x07"  # the window title
    "\x1b[2J"  # clear the screen
    "\x07"  # bell
    "\u202egnp.exe"  # right-to-left override
    "\x9b1m"  # an 8-bit CSI
)
BASE = "a100x8-ubuntu2204-neglected"
HOSTILE = "hostile-host"


def unsafe_in(text: str) -> list[str]:
    """Control and format characters other than newline and tab, judged by unicodedata alone."""
    return [
        f"U+{ord(c):04X}"
        for c in text
        if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")
    ]


def make_hostile_host(hosts: Path) -> Path:
    """A copy of a recorded host with escapes in os-release, /proc/cpuinfo and dmesg."""
    shutil.copytree(profiles.profiles_dir() / BASE, hosts / HOSTILE)
    root = hosts / HOSTILE / "root"
    release = root / "etc/os-release"
    release.write_text(
        release.read_text().replace(
            'PRETTY_NAME="Ubuntu 22.04.5 LTS"', f'PRETTY_NAME="Ubuntu {ESCAPES}"'
        )
    )
    cpuinfo = root / "proc/cpuinfo"
    cpuinfo.write_text(
        cpuinfo.read_text().replace("model name\t: ", f"model name\t: {ESCAPES} ", 1)
    )
    commands_file = hosts / HOSTILE / "commands.json"
    commands = json.loads(commands_file.read_text())
    commands["dmesg"]["stdout"] = commands["dmesg"]["stdout"].replace(
        "GPU has fallen off the bus.", f"GPU has fallen off the bus. {ESCAPES}"
    )
    commands_file.write_text(json.dumps(commands))
    return hosts / HOSTILE


@pytest.fixture
def hostile_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The hostile recorded host, as a built-in profile."""
    make_hostile_host(tmp_path / "hosts")
    monkeypatch.setattr(profiles, "profiles_dir", lambda: tmp_path / "hosts")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return HOSTILE


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("detect",), id="detect"),
        pytest.param(("detect", "--json"), id="detect --json"),
        pytest.param(("recommend",), id="recommend"),
        pytest.param(("recommend", "--json"), id="recommend --json"),
        pytest.param(("doctor",), id="doctor"),
        pytest.param(("doctor", "--json"), id="doctor --json"),
        pytest.param(("apply", "--dry-run"), id="apply --dry-run"),
    ],
)
def test_no_command_prints_an_escape_from_the_machine(
    hostile_host: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    code, output = run(capsys, "--simulate", hostile_host, *args)

    assert code in (0, 1), output
    assert unsafe_in(output) == []
    assert "Ubuntu" in output or "fallen off the bus" in output or "torch" in output


def test_detect_still_shows_what_the_text_said(
    hostile_host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, output = run(capsys, "--simulate", hostile_host, "detect")
    assert "Ubuntu click me" in output and "gnp.exe" in output


def test_json_keeps_every_character_as_an_escape(
    hostile_host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, output = run(capsys, "--simulate", hostile_host, "detect", "--json")
    assert json.loads(output)["facts"]["os"]["pretty_name"] == f"Ubuntu {ESCAPES}"
    assert "\\u001b]52" in output and "\\u202e" in output


def test_doctor_quotes_the_kernel_log_cleaned(
    hostile_host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, output = run(capsys, "--simulate", hostile_host, "doctor")
    assert "bus. click me" in " ".join(output.split())  # the report wraps its lines
    assert unsafe_in(output) == []


def test_a_named_log_is_quoted_cleaned(
    hostile_host: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        f"epoch 1\nRuntimeError: CUDA error: no kernel image is available for execution on the device {ESCAPES}\n"
        f"{ESCAPES}NVIDIA H100 80GB HBM3{ESCAPES} with CUDA capability sm_90 is not compatible with the current "
        "PyTorch installation.\n"
    )
    code, output = run(capsys, "--simulate", hostile_host, "doctor", "--log", str(log))

    assert code == 1
    assert "no-kernel-image" in output and "torch-arch-unsupported" in output
    assert unsafe_in(output) == []


@pytest.fixture(scope="module")
def made_answers() -> str:
    """Answers made on an 8x H100 server (before the hostile host replaces the profiles)."""
    return render_answers(source_for("h100x8-ubuntu2204-fresh"))


@pytest.mark.parametrize(
    ("field", "old", "new"),
    [
        ("made_on.os", 'os: "ubuntu"', f'os: "ubuntu{ESCAPES}"'),
        ("made_on.gpu", 'gpu: "8x H100 SXM5 80GB"', f'gpu: "8x H100{ESCAPES}"'),
        ("plan[0]", '- "driver:', f'- "{ESCAPES}driver:'),
        ("gpuwizard", 'gpuwizard: "0.1.0"', f'gpuwizard: "0.1.0{ESCAPES}"'),
    ],
)
def test_an_answers_file_with_a_control_character_is_refused_naming_the_field(
    made_answers: str, hostile_host: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    field: str, old: str, new: str,
) -> None:  # fmt: skip
    text = made_answers
    assert old in text
    escaped = json.dumps(new)[1:-1].replace('\\"', '"')  # YAML double quotes take JSON's escapes
    answers = tmp_path / "answers.yaml"
    answers.write_text(text.replace(old, escaped, 1))

    code, output = run(
        capsys, "--simulate", hostile_host, "apply", "--config", str(answers), "--dry-run"
    )

    assert code == 2
    assert output.startswith(
        f"gpuwizard: --config {answers}: {field}: contains the control character U+"
    )
    assert output.count("\n") == 1
    assert unsafe_in(output) == []


def test_a_path_with_escapes_in_an_error_is_printed_clean(
    hostile_host: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, output = run(capsys, "apply", "--config", str(tmp_path / f"missing{ESCAPES}.yaml"))
    assert code == 2
    assert "has control characters" in output  # refused before anything looks for it
    assert unsafe_in(output) == []


def test_the_login_banner_prints_a_clean_reason() -> None:
    banner = banner_text("run-1", f"step upgrade-kernel failed: {ESCAPES}")
    assert unsafe_in(banner) == []
    assert "step upgrade-kernel failed: click me" in banner
