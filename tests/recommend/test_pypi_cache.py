"""compat.yaml agrees with what PyPI answered (tools/compat_pypi_cache.json), offline.

The cache is written by ``tools/check_compat.py`` with pip's resolver; these tests hold the table
to it, and check that the comparison and the tool find each kind of disagreement.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from gpuwizard.core.codec import from_jsonable, to_jsonable
from gpuwizard.recommend.pypi_facts import (
    PypiAnswers,
    TorchvisionAnswer,
    admits,
    cuda_build,
    disagreements,
)
from gpuwizard.recommend.table import CompatTable, load_table, parse_table

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "tools" / "compat_pypi_cache.json"


def cached() -> PypiAnswers:
    return from_jsonable(PypiAnswers, json.loads(CACHE.read_text(encoding="utf-8")))


def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_compat", ROOT / "tools/check_compat.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_with(change) -> CompatTable:
    text = (ROOT / "wizard/recommend/compat.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    change(data)
    return parse_table(yaml.safe_dump(data))


def release(data, version):
    return next(r for r in data["torch_releases"] if r["version"] == version)


def test_the_cache_is_dated_and_asked_pypi_with_pip():
    answers = cached()
    assert answers.checked == "2026-12-03"
    assert answers.index == "https://pypi.org/simple" and answers.pip.startswith("pip ")
    assert answers.pythons_asked[0] == "3.7" and answers.pythons_asked[-1] == "3.15"


def test_compat_yaml_agrees_with_pypi():
    assert disagreements(load_table(), cached()) == []


def test_the_cache_knows_every_release_in_the_table():
    answers = cached()
    assert {r.version for r in load_table().torch_releases} <= set(answers.torch)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            lambda d: release(d, "2.5.1").update(python=["3.9", "3.12"]),
            "torch 2.5.1 (x86_64): Python 3.9–3.12 in compat.yaml, PyPI has wheels for 3.9–3.13",
            id="python range",
        ),
        pytest.param(
            lambda d: release(d, "1.13.1").pop("aarch64_python"),
            "torch 1.13.1 (aarch64): Python 3.7–3.11 in compat.yaml, PyPI has wheels for 3.7–3.10",
            id="aarch64 python range",
        ),
        pytest.param(
            lambda d: release(d, "2.14.1").update(default="cu126"),
            "torch 2.14.1 (x86_64): PyPI's default build is cu126 in compat.yaml; the Python 3.10",
            id="default build",
        ),
        pytest.param(
            lambda d: release(d, "2.10.0").update(aarch64_default="cu130"),
            "torch 2.10.0 (aarch64): PyPI's default build is cu130 in compat.yaml",
            id="aarch64 wheel is CPU-only",
        ),
        pytest.param(
            lambda d: release(d, "2.10.0").update(aarch64_default=None),
            "torch 2.10.0 (aarch64): PyPI has wheels (3.10–3.14); compat.yaml says none",
            id="platform",
        ),
        pytest.param(
            lambda d: release(d, "2.14.0").update(torchvision="0.28.0"),
            "torch 2.14.0: torchvision 0.28.0 requires torch==2.13.0, which 2.14.0 does not meet",
            id="torchvision pair",
        ),
        pytest.param(
            lambda d: d["torch_releases"].remove(release(d, "2.2.1")),
            "torch 2.2.1: on PyPI (checked 2026-12-03) but not in compat.yaml",
            id="a release missing",
        ),
        pytest.param(
            lambda d: release(d, "1.12.1").update(default_bundled=False),
            "torch 1.12.1 (x86_64): PyPI's default build is cu102 in compat.yaml",
            id="bundled CUDA is not declared",
        ),
    ],
)
def test_each_kind_of_disagreement_is_found(change, expected):
    found = disagreements(table_with(change), cached())
    assert any(expected in line for line in found), found


def test_a_release_with_no_torchvision_is_flagged_when_pypi_has_one_that_admits_it():
    answers = cached()
    table = table_with(lambda d: release(d, "2.15.0").update(torchvision=None))
    found = disagreements(table, answers)
    assert any(
        "torch 2.15.0: compat.yaml names no torchvision" in f and "0.29.2" in f for f in found
    )


def test_a_torchvision_missing_from_pypi_is_flagged():
    answers = cached()
    gone = dict(answers.torchvision)
    del gone["0.29.1"]
    found = disagreements(load_table(), dataclasses.replace(answers, torchvision=gone))
    assert "torch 2.14.1: torchvision 0.29.1 was not found on PyPI" in found


@pytest.mark.parametrize(
    ("requirements", "build"),
    [
        (("nvidia-cuda-runtime-cu11==11.7.99",), "cu117"),
        (("nvidia-cudnn-cu12==9.1.0.70", "nvidia-cuda-runtime-cu12==12.1.105"), "cu121"),
        (("cuda-toolkit==13.2.2",), "cu132"),
        (("cuda-toolkit[cublas,cudart]==13.0.2",), "cu130"),
        ((), None),
    ],
)
def test_the_cuda_build_is_read_from_the_runtime_pin(requirements, build):
    assert cuda_build(requirements) == build


@pytest.mark.parametrize(
    ("specifier", "version", "expected"),
    [
        ("==2.14.0", "2.14.0", True),
        ("==2.14.0", "2.14.1", False),
        (">=2.14.0", "2.15.0", True),
        (">=2.14.0", "2.13.0", False),
        (">=2.1,<2.3", "2.2.2", True),
        ("==2.1.*", "2.1.2", True),
        ("==2.1.*", "2.2.0", False),
        ("", "2.0.0", True),
        ("===weird", "2.0.0", False),
    ],
)
def test_torch_requirements_are_read_like_pip(specifier, version, expected):
    assert admits(specifier, version) is expected


# ------------------------------------------------------------------- the tool itself (no network)


def test_the_tool_asks_for_every_manylinux_tag_a_release_may_use():
    tags = tool().manylinux_tags("x86_64")
    assert {"manylinux1_x86_64", "manylinux2014_x86_64", "manylinux_2_28_x86_64"} <= set(tags)
    arm = tool().manylinux_tags("aarch64")
    assert "manylinux2014_aarch64" in arm and "manylinux1_aarch64" not in arm


def test_the_tool_runs_pip_with_no_configuration_file_and_no_pip_variables(monkeypatch):
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")
    monkeypatch.setenv("PIP_CONSTRAINT", "/etc/xdg/pip/constraints.txt")
    env = tool().pip_environment()
    assert env["PIP_CONFIG_FILE"] == "/dev/null"
    assert not {k for k in env if k.startswith("PIP_")} - {
        "PIP_CONFIG_FILE",
        "PIP_DISABLE_PIP_VERSION_CHECK",
    }


def test_markers_are_evaluated_for_the_platform_asked():
    # torch 2.10's aarch64 wheel names CUDA packages for x86_64 only: on aarch64 it is CPU-only
    item = {
        "download_info": {"url": "https://files/torch-2.10.0-cp312-cp312-linux_aarch64.whl"},
        "metadata": {
            "requires_python": ">=3.10",
            "requires_dist": [
                'nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and '
                'platform_machine == "x86_64"',
                "filelock",
            ],
        },
    }
    module = tool()
    assert module.wheel_answer(item, "aarch64", "3.12").cuda is None
    assert module.wheel_answer(item, "x86_64", "3.12").cuda == "cu128"


def test_the_tool_offline_passes_on_the_cache_and_fails_on_a_doctored_one(tmp_path, capsys):
    module = tool()
    assert module.main(["--offline"]) == 0
    assert "compat.yaml agrees with PyPI" in capsys.readouterr().out
    answers = cached()
    wrong = dict(answers.torchvision)
    wrong["0.29.1"] = TorchvisionAnswer("torchvision-0.29.1.whl", ">=3.10", "==2.13.0")
    doctored = tmp_path / "cache.json"
    doctored.write_text(json.dumps(to_jsonable(dataclasses.replace(answers, torchvision=wrong))))
    assert module.main(["--offline", "--cache", str(doctored)]) == 1
    out = capsys.readouterr().out
    assert "torch 2.14.1: torchvision 0.29.1 requires torch==2.13.0" in out
    assert "1 disagreement(s)" in out
