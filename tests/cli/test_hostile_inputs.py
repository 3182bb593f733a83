"""Hostile input, as a person or a broken machine can hand it to gpuwizard: every file and value
ends in one line on stderr and a documented exit code, within 10 s and 2 GiB of address space.

Each case runs the installed command in a subprocess with those limits set, so a hang, a
runaway read or a traceback fails the case. Files named by flag are refused before they are
read when they are not regular files (a FIFO would hang, /dev/zero would never end).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from gpuwizard.export.answers import render_answers
from tests.export.conftest import source_for
from tests.export.test_answers import SCHEMA_2

pytestmark = pytest.mark.timeout(60)
ADDRESS_SPACE = 2 << 30
H100 = "h100x8-ubuntu2204-fresh"


def bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def gpuwizard(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(home), "GPUWIZARD_SIM_BENCH_PACE": "0"}
    env.update((k, v) for k, v in os.environ.items() if k.startswith("COVERAGE_"))
    return subprocess.run(
        [sys.executable, "-m", "gpuwizard", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=10,  # a bound on hangs, not a performance target
        preexec_fn=bounded,
        check=False,
    )


def refused(done: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The one error line; the exit code and the absence of anything else are checked."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == code, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuwizard: "), done.stderr
    return lines[0]


# ------------------------------------------------------------------ files that are not files


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def folder(path: Path) -> Path:
    path.mkdir()
    return path


def huge(path: Path) -> Path:
    with path.open("wb") as out:
        out.truncate(50 << 20)  # 50 MiB (sparse: nothing is written)
    return path


def binary(path: Path) -> Path:
    path.write_bytes(b"schema: 1\n\0\0\0")
    return path


def latin1(path: Path) -> Path:
    path.write_bytes("made_on: Düsseldorf\n".encode("latin-1"))
    return path


def loop(path: Path) -> Path:
    path.symlink_to(path.name)
    return path


NOT_FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "fifo": (fifo, "a named pipe (FIFO), not a file"),
    "folder": (folder, "a folder, not a file"),
    "50 MiB": (huge, "50.0 MiB is too large for"),
    "binary": (binary, "a binary file (a NUL byte at offset 10)"),
    "latin-1": (latin1, "not UTF-8 text (byte 0xfc at offset 10)"),
    "missing": (lambda path: path, "no such file"),
    "symlink loop": (loop, "too many levels of symbolic links"),
}
FLAGS = {
    "apply --config": ("--simulate", H100, "apply", "--dry-run", "--config"),
    "export --config": ("--simulate", H100, "export", "--config"),
    "recommend --facts": ("recommend", "--facts"),
}


@pytest.mark.parametrize("kind", NOT_FILES)
@pytest.mark.parametrize("flag", FLAGS)
def test_a_file_that_is_not_a_usable_file_is_refused_before_reading(
    tmp_path: Path, flag: str, kind: str
) -> None:
    make, message = NOT_FILES[kind]
    path = make(tmp_path / "given")
    line = refused(gpuwizard(tmp_path, *FLAGS[flag], str(path)))
    assert f"{path}: {message}" in line


@pytest.mark.parametrize(
    ("given", "message"),
    [
        pytest.param(fifo, "a named pipe (FIFO), not a file", id="fifo"),
        pytest.param(folder, "a folder, not a file", id="folder"),
        pytest.param(lambda _: Path("/dev/zero"), "a device, not a file", id="/dev/zero"),
        pytest.param(lambda path: path, "no such file", id="missing"),
    ],
)
def test_doctor_refuses_a_log_that_is_not_a_file(
    tmp_path: Path, given: Callable[[Path], Path], message: str
) -> None:
    path = given(tmp_path / "train.log")
    line = refused(gpuwizard(tmp_path, "--simulate", H100, "doctor", "--log", str(path)))
    assert line == f"gpuwizard: --log {path}: {message}"


def test_doctor_reads_only_the_end_of_a_huge_log(tmp_path: Path) -> None:
    log = huge(tmp_path / "train.log")
    with log.open("ab") as out:
        out.write(b"\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    done = gpuwizard(tmp_path, "--simulate", H100, "doctor", "--log", str(log))
    assert "Traceback" not in done.stderr and done.returncode in (0, 1)
    assert "out of memory" in done.stdout.lower()


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_as_facts_or_answers_is_refused(tmp_path: Path, device: str) -> None:
    for args in (
        ("recommend", "--facts", device),
        ("--simulate", H100, "apply", "--config", device),
    ):
        assert refused(gpuwizard(tmp_path, *args)).endswith(f"{device}: a device, not a file")


# ------------------------------------------------------------------ answers files


def answers_text(older: bool = False, **changes: object) -> str:
    """A real answers file (of the simulated H100 server; ``older``: as schema 2 wrote it), with
    top-level sections changed."""
    text = SCHEMA_2.read_text(encoding="utf-8") if older else render_answers(source_for(H100))
    data = yaml.safe_load(text)
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        node = data
        for key in path:
            node = node[key]
        node[last] = value
    return yaml.safe_dump(data)


ANSWERS = {
    "not YAML": ("schema: [1\n", "not valid YAML at line 2"),
    "a list": ("- 1\n- 2\n", "expected a mapping of answers"),
    "a number": ("42\n", "expected a mapping of answers"),
    "newer schema": (
        answers_text(schema=9, gpuwizard="9.1.0"),
        "schema 9 was written by gpuwizard 9.1.0; this is gpuwizard 0.1.0 (schema 3): upgrade",
    ),
    "schema 1, nvcc wished twice, differently": (
        answers_text(older=True, schema=1, choices__needs_nvcc=True),
        "choices.needs_nvcc (true) and options.needs_nvcc (false) disagree: keep the one you mean",
    ),
    "schema as text": (answers_text(schema="1"), "schema: expected a whole number"),
    "schema as bool": (answers_text(schema=True), "schema: expected a whole number"),
    "unknown key": (answers_text(colour="blue"), "colour"),
    "missing key": ("schema: 3\ngpuwizard: '0.1.0'\n", "made_on"),
    "version as number": (answers_text(request__torch=2.1), "quote it"),
    "alias": (
        "schema: 1\nx: &a [1]\ny: *a\n",
        "YAML anchors (&name) are not allowed in an answers file",
    ),
    "nested too deeply": ("x: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    "unknown torch": (
        answers_text(request__torch="2.99.0"),
        "request.torch '2.99.0': no such PyTorch release in gpuwizard's table",
    ),
    "unknown build": (
        answers_text(request__variant="cu999"),
        "request.variant 'cu999': no PyTorch release has that CUDA build",
    ),
    "build the release never had": (
        answers_text(request__torch="2.5.1", request__variant="cu130"),
        "request.variant 'cu130': torch 2.5.1 was never built for CUDA 13.0 (request.torch 2.5.1 has cu118, cu121, cu124)",
    ),
    "unknown driver branch": (
        answers_text(request__driver_branch="999"),
        "request.driver_branch 999: R999 is not in gpuwizard's table",
    ),
    "branch as number": (answers_text(request__driver_branch=580), "request.driver_branch"),
    "unknown kernel modules": (
        answers_text(request__driver_flavour="closed"),
        "request.driver_flavour",
    ),
    "a Python the pinned release never had": (
        answers_text(request__torch="2.15.0", request__python="3.10"),
        "request.python 3.10: torch 2.15.0 never shipped wheels for it",
    ),
    "env name with ..": (answers_text(request__env_name=".."), "request.env_name"),
    "env name with a slash": (answers_text(request__env_name="a/b"), "request.env_name"),
    "env name with a newline": (answers_text(request__env_name="a\nb"), "request.env_name"),
    # issue 28: `$` let a final newline through; the last of two keys silently won; Python
    # cannot read a 4,300-digit integer (a traceback before)
    "env name with a final newline": (
        answers_text(request__env_name="pytorch\n"),
        "request.env_name 'pytorch\\n': use letters",
    ),
    "a key given twice": (
        answers_text() + "schema: 1\n",
        "the key 'schema' is given twice (line ",
    ),
    "a key given twice in a section": (
        answers_text().replace("  cudnn: false\n", "  cudnn: false\n  cudnn: true\n"),
        "the key 'cudnn' is given twice",
    ),
    "a 5,000-digit number": (
        answers_text().replace("schema: 3", "schema: " + "9" * 5000),
        "Exceeds the limit (4300 digits) for integer string conversion",
    ),
    "a date Python cannot read": (answers_text() + "when: 2026-13-45\n", "month must be"),
}


@pytest.mark.parametrize("case", ANSWERS)
def test_a_bad_answers_file_is_one_line(tmp_path: Path, case: str) -> None:
    text, message = ANSWERS[case]
    path = tmp_path / "answers.yaml"
    path.write_text(text)
    line = refused(
        gpuwizard(tmp_path, "--simulate", H100, "apply", "--dry-run", "--config", str(path))
    )
    assert line.startswith(f"gpuwizard: --config {path}: ") and message in line


# ------------------------------------------------------------------ facts files


FACTS = {
    "not JSON": ("{", "not JSON"),
    "a list": ("[1, 2]", "expected a JSON object of facts, got list"),
    "newer schema": ('{"schema": 7}', "facts schema 7 come from a newer gpuwizard"),
    "nested too deeply": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "a 5,000-digit number": ('{"schema": ' + "9" * 5000 + "}", "a number with 5000 digits"),
}


@pytest.mark.parametrize("case", FACTS)
def test_a_bad_facts_file_is_one_line(tmp_path: Path, case: str) -> None:
    text, message = FACTS[case]
    path = tmp_path / "facts.json"
    path.write_text(text)
    line = refused(gpuwizard(tmp_path, "recommend", "--facts", str(path)))
    assert line.startswith(f"gpuwizard: --facts {path}: ") and message in line


def test_a_driver_version_from_nvml_that_is_not_dotted_does_not_stop_recommend(
    tmp_path: Path,
) -> None:
    """NVML's answer as a facts file or a recorded host gives it (issue 28: a traceback): the
    packages' version is used instead."""
    facts = gpuwizard(tmp_path, "--simulate", "h200-ubuntu2404-driver570", "detect", "--json")
    assert '"driver_version": "570.133.20"' in facts.stdout
    path = tmp_path / "facts.json"
    path.write_text(
        facts.stdout.replace('"driver_version": "570.133.20"', '"driver_version": "570.beta"')
    )
    done = gpuwizard(tmp_path, "recommend", "--facts", str(path))
    assert done.returncode == 0, done.stderr
    assert "keep R570" in done.stdout and "Traceback" not in done.stderr


# ------------------------------------------------------------------ values


VALUES = {
    "unknown torch": (("--torch", "2.99.0"), "--torch '2.99.0': no such PyTorch release"),
    "malformed torch": (("--torch", "2.x"), "--torch '2.x': expected a version like 2.14.1"),
    "torch with a newline": (("--torch", "2.14.1\n"), "--torch '2.14.1\\n': expected a version"),
    "unknown build": (("--variant", "cu999"), "--variant 'cu999': no PyTorch release has that"),
    "malformed build": (("--variant", "cuda12"), "--variant 'cuda12': expected a CUDA build"),
    "a pair that never existed": (
        ("--torch", "2.5.1", "--variant", "cu130"),
        "--variant 'cu130': torch 2.5.1 was never built for CUDA 13.0",
    ),
    "unknown driver branch": (("--driver-branch", "999"), "--driver-branch 999: R999 is not in"),
    "end-of-life branch": (("--driver-branch", "470"), "R470 reached its end of life in 2024-07"),
    "malformed branch": (("--driver-branch", "r580"), "--driver-branch 'r580': expected a driver"),
    "branch with a newline": (("--driver-branch", "580\n"), "--driver-branch"),
    "unknown kernel modules": (("--kernel-modules", "closed"), "--kernel-modules: invalid choice"),
    "malformed Python": (("--env-python", "three"), "--env-python 'three': expected a Python"),
    "a Python no release has": (("--env-python", "3.99"), "no PyTorch release in gpuwizard's"),
    "a Python the release never had": (
        ("--torch", "2.15.0", "--env-python", "3.10"),
        "--env-python 3.10: torch 2.15.0 never shipped wheels for it",
    ),
    "env name ..": (("--env-name", ".."), "--env-name '..': use letters"),
    "env name with a slash": (("--env-name", "a/b"), "--env-name 'a/b': use letters"),
    "env name with a newline": (("--env-name", "a\nb"), "--env-name 'a\\nb': use letters"),
    "env name with escape": (("--env-name", "a\x1b[2Jb"), "--env-name 'a\\x1b[2Jb': use letters"),
    "env name with a final newline": (
        ("--env-name", "pytorch\n"),
        "--env-name 'pytorch\\n': use letters",
    ),
}


@pytest.mark.parametrize("case", VALUES)
def test_a_bad_value_is_one_line(tmp_path: Path, case: str) -> None:
    args, message = VALUES[case]
    line = refused(gpuwizard(tmp_path, "--simulate", H100, "apply", "--dry-run", *args))
    assert message in line


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("export", "-o", "out\ndir"), id="export -o"),
        pytest.param(("bench", "--python", "/usr/bin/python3\n"), id="bench --python"),
        pytest.param(("doctor", "--env", "/opt/env\x1b]52;c;x\x07"), id="doctor --env"),
        pytest.param(("doctor", "--log", "a\rb"), id="doctor --log"),
        pytest.param(("capture-host", "dir\n"), id="capture-host DIR"),
        pytest.param(("capture-host", "d", "--description", "two\nlines"), id="--description"),
    ],
)
def test_a_path_with_control_characters_is_refused(tmp_path: Path, args: tuple[str, ...]) -> None:
    line = refused(gpuwizard(tmp_path, "--simulate", H100, *args))
    assert "has control characters" in line
