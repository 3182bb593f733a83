"""The Dockerfile export: golden files, hadolint, the base-image rule, quoting of hostile values.

Regenerate the golden files on purpose, after reviewing the change, with
``GPUWIZARD_UPDATE_GOLDEN=1 pytest tests/export/test_dockerfile.py``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpuwizard.core import download_pins
from gpuwizard.core.download_pins import load_pins
from gpuwizard.core.facts import NvmlOk
from gpuwizard.core.ops import Command
from gpuwizard.core.plan import StepPlan, Target, WriteFile
from gpuwizard.core.request import SetupRequest
from gpuwizard.core.version import Version
from gpuwizard.export.docker_host import render_docker_host_notes
from gpuwizard.export.dockerfile import PYTHON_LINK, render_dockerfile, run_command
from gpuwizard.export.source import ExportError, ExportSource
from gpuwizard.export.words import shell_word
from gpuwizard.recommend.table import load_table
from gpuwizard.steps import build_plan
from tests.export.conftest import ALL_OPTIONS, PROFILES, check_golden, source_for, tool

ALL_OPTIONS_CASE = "a100x4-ubuntu2004-fresh-all-options"
CASES = {
    **{p: (p, SetupRequest()) for p in PROFILES},
    ALL_OPTIONS_CASE: ("a100x4-ubuntu2004-fresh", ALL_OPTIONS),
}
"""Golden folder -> (profile, options): every built-in profile, and one with every option on."""


def case_source(case: str) -> ExportSource:
    profile, options = CASES[case]
    return source_for(profile, options)


def instructions(dockerfile: str) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments and blanks dropped."""
    out: list[str] = []
    pending = ""
    for line in dockerfile.split("\n"):
        if not pending and (not line.strip() or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        out.append(pending + line)
        pending = ""
    return out


def hadolint(*texts: str, tmp_path: Path) -> list[dict[str, object]]:
    binary = tool("hadolint")
    files = []
    for i, text in enumerate(texts):
        file = tmp_path / f"Dockerfile.{i}"
        file.write_text(text, encoding="utf-8")
        files.append(str(file))
    result = subprocess.run(
        [binary, "--no-color", "-f", "json", *files], capture_output=True, text=True, timeout=60
    )
    findings: list[dict[str, object]] = json.loads(result.stdout or "[]")
    assert findings or result.returncode == 0, result.stderr
    return findings


# --------------------------------------------------------------------------- golden


@pytest.mark.parametrize("case", CASES)
def test_dockerfile_matches_its_golden_file(case: str) -> None:
    check_golden(case, "Dockerfile", render_dockerfile(case_source(case)))


@pytest.mark.parametrize("case", CASES)
def test_host_notes_match_their_golden_file(case: str) -> None:
    check_golden(case, "docker-host.md", render_docker_host_notes(case_source(case)))


def test_every_golden_dockerfile_passes_hadolint(tmp_path: Path) -> None:
    texts = [render_dockerfile(case_source(case)) for case in CASES]
    assert hadolint(*texts, tmp_path=tmp_path) == []


# ----------------------------------------------------------------------- base image


@pytest.mark.parametrize(
    ("case", "image"),
    [
        pytest.param(
            "a100x4-ubuntu2004-fresh",
            "nvidia/cuda:12.6.3-base-ubuntu20.04",
            id="R570 (CUDA 12.8) does not cap cu126",
        ),
        pytest.param(
            "h100x8-ubuntu2204-fresh",
            "nvidia/cuda:13.0.2-base-ubuntu22.04",
            id="R580 and cu130 agree on 13.0",
        ),
        pytest.param(
            "t4-debian12-fresh",
            "nvidia/cuda:13.0.2-base-ubuntu22.04",
            id="Debian 12: the Ubuntu that packages Python 3.11",
        ),
        pytest.param(
            "l40sx4-rocky9-fresh", "nvidia/cuda:13.0.2-base-rockylinux9", id="Rocky: rockylinux9"
        ),
        pytest.param(
            "rtx5090-ubuntu2404-secureboot",
            "nvidia/cuda:13.0.2-base-ubuntu24.04",
            id="Ubuntu 24.04",
        ),
        pytest.param(
            "v100x4-ubuntu2204-driver535",
            "nvidia/cuda:12.2.2-base-ubuntu22.04",
            id="kept R535: NVML's CUDA 12.2",
        ),
    ],
)
def test_base_image_is_the_lower_of_driver_and_torch_cuda(case: str, image: str) -> None:
    froms = [i for i in instructions(render_dockerfile(case_source(case))) if i.startswith("FROM ")]
    assert froms[-1] == f"FROM {image}"


@pytest.mark.parametrize("case", CASES)
def test_base_image_cuda_never_exceeds_what_the_driver_supports(case: str) -> None:
    source = case_source(case)
    text = render_dockerfile(source)
    tag = re.search(r"^FROM nvidia/cuda:(\d+\.\d+)\.\d+-base-\S+$", text, re.MULTILINE)
    assert tag, "an exact X.Y.Z tag"
    branch = load_table().branch(source.selection.driver.branch)
    nvml = source.facts.boot.nvml
    if branch is None:  # a driver the table does not list (WSL's Windows driver): NVML says
        assert isinstance(nvml, NvmlOk) and source.selection.driver.action == "keep"
        limit = nvml.cuda_driver_version
    else:
        limit = branch.max_cuda
    cuda = Version.parse(tag.group(1))
    assert cuda <= Version.parse(limit)
    assert cuda <= Version.parse(
        source.selection.torch.variant[2:-1] + "." + source.selection.torch.variant[-1]
    )
    assert ":latest" not in text


def test_an_unseen_tag_is_marked_unconfirmed() -> None:
    text = render_dockerfile(source_for("l40sx4-rocky9-fresh"))
    assert "UNCONFIRMED: the tag nvidia/cuda:13.0.2-base-rockylinux9" in text
    assert "UNCONFIRMED: the tag" not in render_dockerfile(source_for("h100x8-ubuntu2204-fresh"))


def test_a_base_image_without_a_pinned_digest_says_so_and_one_with_a_digest_is_pinned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = source_for("a100x4-ubuntu2004-fresh")  # standalone Python: the uv image too
    text = render_dockerfile(source)
    header = " ".join(line.removeprefix("# ") for line in text.split("\nFROM ")[0].splitlines())
    assert (
        "UNCONFIRMED digest: nvidia/cuda:12.6.3-base-ubuntu20.04, ghcr.io/astral-sh/uv:0.13.9 are pinned by tag only"
        in header
    )
    assert "\nFROM nvidia/cuda:12.6.3-base-ubuntu20.04\n" in text

    digest = "sha256:" + "ab" * 32
    with_digest = dataclasses.replace(
        load_pins(), image_digests={"nvidia/cuda:12.6.3-base-ubuntu20.04": digest}
    )
    monkeypatch.setattr(download_pins, "load_pins", lambda: with_digest)
    pinned = render_dockerfile(source)
    assert f"\nFROM nvidia/cuda:12.6.3-base-ubuntu20.04@{digest}\n" in pinned
    assert "UNCONFIRMED digest: ghcr.io/astral-sh/uv:0.13.9 is pinned by tag only" in " ".join(
        line.removeprefix("# ") for line in pinned.splitlines()
    )


# -------------------------------------------------------------------------- content


def test_only_image_steps_are_built_and_host_steps_are_listed() -> None:
    source = case_source(ALL_OPTIONS_CASE)
    text = render_dockerfile(source)
    runs = "\n".join(i for i in instructions(text) if i.startswith("RUN "))
    for host_only in (
        "nvidia-driver-570-server-open",
        "update-initramfs",
        "apt-mark",
        "docker.io",
        "reboot",
    ):
        assert host_only not in runs
    header = text.split("\nFROM ")[0]
    for step in (
        "install-nvidia-driver",
        "blacklist-nouveau",
        "reboot",
        "install-container-toolkit",
    ):
        assert f"#   {step}: " in header
    assert "cuda-toolkit-12-6" in runs and "cudnn9-cuda-12" in runs and "/etc/nccl.conf" in runs


UV_INSTALL = (
    "UV_PYTHON_INSTALL_DIR=/opt/gpuwizard/python UV_NO_CONFIG=1 UV_SYSTEM_CERTS=1 /opt/gpuwizard/bin/uv pip install "
    "--no-cache --python /opt/gpuwizard/envs/pytorch/bin/python --reinstall-package torch --reinstall-package torchvision "
    "--index-url "
)


def test_torch_comes_pinned_from_the_plans_index_by_uv_without_a_cache() -> None:
    source = source_for("a100x4-ubuntu2004-fresh")  # cu126: PyTorch's own index, by version
    text = render_dockerfile(source)
    runs = [i for i in instructions(text) if "torch==" in i]
    assert len(runs) == 1
    assert (
        f"{UV_INSTALL}https://download.pytorch.org/whl/cu126 torch==2.14.1 torchvision==0.29.1"
    ) in runs[0]
    assert "pip==" not in runs[0] and "gpuwizard-fetch" not in text
    assert "COPY --from=uv /uv /opt/gpuwizard/bin/uv" in instructions(text)


def test_pypis_default_torch_build_is_installed_by_uv_checked_against_the_pinned_hashes() -> None:
    source = source_for("h100x8-ubuntu2204-fresh")  # cu130, PyPI's default build of 2.14.1
    (run,) = [i for i in instructions(render_dockerfile(source)) if "--verify-hashes" in i]
    hashes = "/var/cache/gpuwizard/torch-2.14.1-cu130.hashes.txt"
    assert f"> {hashes}" in run
    assert f"{UV_INSTALL}https://pypi.org/simple --verify-hashes -r {hashes}" in run
    assert run.rstrip().endswith("&& rm -rf /var/cache/gpuwizard"), (
        "the hashes file is not kept in the layer"
    )
    assert "--hash=sha256:1fee6b20869a90ccec05e35559a706338ac8aab40a9c4fb58f16667e93af36ae" in run


@pytest.mark.parametrize(
    ("case", "python"),
    [
        pytest.param(
            "h100x8-ubuntu2204-fresh",
            "apt-get -q -y -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold -o Dpkg::Progress-Fancy=0 install --no-install-recommends python3.10 python3.10-venv",
            id="system python as a package",
        ),
        pytest.param(
            "l40sx4-rocky9-fresh",
            "dnf -y -q install python3.12 \\\n    && UV_PYTHON_INSTALL_DIR=/opt/gpuwizard/python "
            "UV_NO_CONFIG=1 UV_SYSTEM_CERTS=1 /opt/gpuwizard/bin/uv venv --clear --python /usr/bin/python3.12",
            id="Rocky's python3.12",
        ),
        pytest.param(
            "a100x4-ubuntu2004-fresh",
            "/opt/gpuwizard/bin/uv venv --clear --python 3.12 /opt/gpuwizard/envs/pytorch",
            id="focal: standalone via uv",
        ),
    ],
)
def test_the_image_gets_the_environments_python(case: str, python: str) -> None:
    assert python in render_dockerfile(case_source(case))


def test_a_torch_already_installed_on_the_host_is_still_installed_in_the_image() -> None:
    source = source_for("h100x8-ubuntu2204-fresh")
    steps = tuple(
        dataclasses.replace(s, actions=()) if s.id == "install-torch" else s
        for s in source.plan.steps
    )
    plan = dataclasses.replace(source.plan, steps=steps)
    text = render_dockerfile(dataclasses.replace(source, plan=plan))
    assert "--verify-hashes -r /var/cache/gpuwizard/torch-2.14.1-cu130.hashes.txt" in text


def test_the_image_runs_as_a_numeric_non_root_user_and_verifies_torch_on_start() -> None:
    found = instructions(render_dockerfile(source_for("t4-debian12-fresh")))
    assert "USER 10001:10001" in found and "WORKDIR /workspace" in found
    cmd = json.loads(found[-1].removeprefix("CMD "))
    # -I: the working folder (a mounted /workspace) is never searched for modules
    assert cmd[:3] == ["/opt/gpuwizard/envs/pytorch/bin/python", "-I", "-c"]
    compile(cmd[3], "<CMD>", "exec")
    assert "torch.cuda.is_available()" in cmd[3] and "device_count()" in cmd[3]
    assert "torch.__version__" in cmd[3]


def test_host_notes_say_what_the_host_needs() -> None:
    with_docker = render_docker_host_notes(case_source(ALL_OPTIONS_CASE))
    assert "R570 (570.133.20" in with_docker and "the plan installs it" in with_docker
    assert "the plan sets them up" in with_docker
    assert "docker build -t gpuwizard-pytorch:2.14.1-cu126 ." in with_docker
    assert "docker run --gpus all --rm gpuwizard-pytorch:2.14.1-cu126" in with_docker
    kept = render_docker_host_notes(source_for("v100x4-ubuntu2204-driver535"))
    assert "R535 (535.247.01" in kept and "the plan keeps it" in kept
    assert "nvidia-ctk runtime configure --runtime=docker" in kept
    assert "apt-get install -y docker.io nvidia-container-toolkit" in kept
    rocky = render_docker_host_notes(source_for("l40sx4-rocky9-fresh"))
    assert "dnf install -y docker-ce docker-ce-cli containerd.io nvidia-container-toolkit" in rocky


# --------------------------------------------------------------------- hostile values

SPECIALS = ["'", '"', " ", "$(id)", "`id`", "\n", "\t", "\r", "é", "日本", "-rf", "--x", ": ", "#",
            "{", "}", "*", "&", "!", "\\", "$HOME", "${PATH}", "<<EOF", ";", "|", "~", "\x85", "\u2028"]  # fmt: skip
hostile = st.lists(
    st.one_of(st.sampled_from(SPECIALS), st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0"), max_size=6)),
    min_size=1,
    max_size=6,
).map("".join)  # fmt: skip
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
hostile_path = hostile.map(lambda s: "/" + "".join("_" if c in LINE_BREAKS else c for c in s))


def bash_words(words: list[str]) -> list[str]:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = "printf '%s\\0' " + " ".join(words)
    out = subprocess.run([bash, "-c", script], capture_output=True, timeout=10, check=True).stdout
    return out.decode("utf-8").split("\0")[:-1]


@settings(max_examples=60, deadline=None)
@given(st.lists(hostile, min_size=1, max_size=4))
def test_shell_words_keep_every_value_exactly_on_one_line(values: list[str]) -> None:
    words = [shell_word(v) for v in values]
    assert all(not any(c in LINE_BREAKS for c in w) for w in words)
    assert bash_words(words) == values


@pytest.mark.parametrize(
    ("run", "exists", "status"),
    [
        pytest.param(
            Command(("sh", "-c", "exit 2"), ok_codes=(0, 2)),
            False,
            0,
            id="an ok exit code other than 0",
        ),
        pytest.param(
            Command(("sh", "-c", "exit 3"), ok_codes=(0, 2)), False, 1, id="any other code fails"
        ),
        pytest.param(Command(("false",), creates="MARKER"), True, 0, id="creates present: skipped"),
        pytest.param(Command(("false",), creates="MARKER"), False, 1, id="creates absent: run"),
    ],
)
def test_ok_codes_and_creates_mean_in_bash_what_they_mean_to_the_runner(
    run: Command, exists: bool, status: int, tmp_path: Path
) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    marker = tmp_path / "marker file"
    if exists:
        marker.write_text("")
    if run.creates:
        run = dataclasses.replace(run, creates=str(marker))
    result = subprocess.run(
        [bash, "-c", run_command(run, "test-step")], capture_output=True, timeout=10
    )
    assert (result.returncode != 0) == bool(status)


def hostile_source(
    argv: list[str],
    env_value: str,
    path: str,
    content: str,
    env_path: str,
    creates: str | None = None,
) -> ExportSource:
    """The h100 plan plus an image step whose every user-influenced value is the given one."""
    source = source_for("h100x8-ubuntu2204-fresh")
    step = StepPlan(
        id="custom-step",
        title="A step with hostile values",
        why="property test",
        actions=(
            Command(
                ("/usr/local/bin/tool", *argv), env={"GW_VALUE": env_value}, creates=creates or path
            ),
            WriteFile(path, content, mode=0o600),
        ),
        targets=(Target.HOST, Target.IMAGE),
    )
    env = dataclasses.replace(source.selection.env, path=env_path)
    selection = dataclasses.replace(source.selection, env=env)
    plan = build_plan(selection, source.facts, source.plan.summary)  # the path in every step
    plan = dataclasses.replace(plan, steps=(*plan.steps, step))
    return dataclasses.replace(source, plan=plan, selection=selection)


def docker_env_value(text: str) -> str:
    """Undo Dockerfile double-quote escaping (\\\\, \\", \\$), as Docker's lexer does."""
    return re.sub(r'\\([\\"$])', r"\1", text)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    argv=st.lists(hostile, min_size=1, max_size=4),
    env_value=hostile,
    path=hostile_path,
    content=hostile,
    env_path=hostile_path,
)
@example(argv=["'"], env_value="'", path="/'", content="'", env_path='/\\"')  # CMD needs escapes
@example(argv=["fi"], env_value="'", path="/'", content="'", env_path="/'")  # a reserved word
def test_hostile_values_stay_exact_and_the_dockerfile_still_passes_hadolint(
    argv: list[str], env_value: str, path: str, content: str, env_path: str, tmp_path: Path
) -> None:
    text = render_dockerfile(hostile_source(argv, env_value, path, content, env_path))
    found = instructions(text)
    custom = next(i for i in found if "/usr/local/bin/tool" in i)
    assert " ".join(shell_word(a) for a in argv) in custom
    assert f"GW_VALUE={shell_word(env_value)}" in custom
    assert f"printf '%s' {shell_word(content)} > {shell_word(path)}" in custom
    python = json.loads(found[-1].removeprefix("CMD "))[0]
    if python == PYTHON_LINK:  # a path JSON must escape: CMD runs a link to it
        assert f"ln -s {shell_word(env_path + '/bin/python')} {PYTHON_LINK}" in text
    else:
        assert python == f"{env_path}/bin/python"
    uv = next(i for i in found if "torch==" in i)
    python = shell_word(env_path + "/bin/python")
    again = "--reinstall-package torch --reinstall-package torchvision"
    assert (
        f"/opt/gpuwizard/bin/uv pip install --no-cache --python {python} {again} --index-url " in uv
    )
    env_line = next((i for i in found if i.startswith("ENV VIRTUAL_ENV=")), None)
    if "\\" in env_path:  # hadolint cannot parse an escaped backslash in ENV: left out
        assert env_line is None
    else:
        quoted = re.match(r'ENV VIRTUAL_ENV="((?:[^"\\]|\\.)*)"', env_line or "")
        assert quoted and docker_env_value(quoted.group(1)) == env_path
    for line in text.split(
        "\n"
    ):  # every physical line is an instruction, a comment or a continuation
        assert not line or line[0] in "#" or re.match(r"[A-Z]+ |    ", line), line
    assert hadolint(text, tmp_path=tmp_path) == []


@pytest.mark.parametrize(
    ("where", "bad"),
    [
        pytest.param("env_path", "/opt/env\nRUN rm -rf /", id="newline in the environment path"),
        pytest.param("path", "/etc/x\0y", id="NUL in a file path"),
        pytest.param("path", "/etc/a\rb", id="carriage return in a file path"),
        pytest.param("creates", "/opt/\u2028x", id="line separator in a creates path"),
    ],
)
def test_a_path_with_a_line_break_or_nul_is_refused_in_one_line(where: str, bad: str) -> None:
    values = {"env_path": "/opt/env", "path": "/etc/x", "creates": "/etc/x"} | {where: bad}
    source = hostile_source(["a"], "v", values["path"], "c", values["env_path"], values["creates"])
    with pytest.raises(ExportError) as raised:
        render_dockerfile(source)
    assert "\n" not in str(raised.value) and str(raised.value)
