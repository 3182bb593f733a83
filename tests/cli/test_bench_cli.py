"""`gpuwizard bench` on simulated machines: after the wizard installed PyTorch, before it did,
and every bad input as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import gpuwizard

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated 8x H100 server the wizard has set up (install, reboot, install)."""
    home = tmp_path_factory.mktemp("home")
    profile = ("--simulate", "h100x8-ubuntu2204-fresh")
    assert gpuwizard(home, *profile, "apply", "--yes").returncode == 10  # reboot, then again
    assert gpuwizard(home, *profile, "apply", "--yes").returncode == 0
    return home


def test_bench_runs_in_the_environment_the_wizard_built(installed: Path) -> None:
    done = gpuwizard(installed, "--simulate", "h100x8-ubuntu2204-fresh", "bench", "--json")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert results["gpu"] == "8x H100 SXM5 80GB"
    assert [(r["mode"], r["world_size"]) for r in results["results"]] == [
        ("fp32", 1), ("tf32", 1), ("amp-fp16", 1), ("amp-bf16", 1), ("amp-bf16", 8),
    ]  # fmt: skip
    assert results["verdict"]["level"] == "good"
    assert "with /opt/gpuwizard/envs/pytorch/bin/python (gpuwizard's environment);" in done.stderr
    saved = Path(done.stderr.split("results in ", 1)[1].split()[0])
    assert {p.name for p in saved.iterdir()} == {
        "stream.jsonl",
        "worker.log",
        "results.json",
        "results.md",
    }
    (ddp,) = [line for line in (saved / "worker.log").read_text().splitlines() if "DDP" in line]
    assert ddp.endswith("--batch-fitted amp-bf16=256")  # the one-GPU run's batch, reused


def test_bench_on_one_gpu_with_chosen_modes(installed: Path) -> None:
    done = gpuwizard(
        installed, "--simulate", "h100x8-ubuntu2204-fresh", "bench", "--gpus", "1", "--modes", "amp-bf16", "--no-dataload"
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "amp-bf16 on 1 GPU: " in done.stdout
    assert "DDP" not in done.stdout and "dataset disk" not in done.stdout


def test_json_keeps_stdout_to_the_json_while_stderr_shows_each_sample(installed: Path) -> None:
    done = gpuwizard(
        installed, "--simulate", "h100x8-ubuntu2204-fresh", "bench", "--json", "--gpus", "1",
        "--modes", "tf32,amp-bf16", "--no-dataload",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("{") and done.stdout.rstrip().endswith("}")
    results = json.loads(done.stdout)  # nothing but the JSON
    for result in results["results"]:
        mode, batch, samples = result["mode"], result["batch_size"], result["samples"]
        live = [line for line in done.stderr.splitlines() if line.startswith(f"  {mode}, batch ")]
        assert len(live) == samples >= 5
        assert live[0].startswith(f"  {mode}, batch {batch}: 1 sample, ")
        assert live[-1].startswith(f"  {mode}, batch {batch}: {samples} samples, ")
        assert all(" img/s now, " in line and line.endswith(" s elapsed") for line in live)


def test_bench_in_an_environment_without_torch_says_why(tmp_path: Path) -> None:
    """An environment the wizard made whose torch is gone: the worker says what is missing."""
    profile = ("--simulate", "h100x8-ubuntu2204-fresh")
    env = tmp_path / "gpuwizard/sim/h100x8-ubuntu2204-fresh/sandbox/root/opt/gpuwizard/envs/pytorch"
    gpuwizard(tmp_path, *profile, "doctor")  # the simulated machine (its sandbox) exists now
    (env / "bin").mkdir(parents=True)
    (env / "bin/python").write_text("")
    (env / "pyvenv.cfg").write_text("version = 3.10.12\n")
    done = gpuwizard(tmp_path, *profile, "bench")
    assert done.returncode == 1
    assert (
        "the worker exited 2 before finishing: ModuleNotFoundError: No module named 'torch'"
        in done.stdout
    )
    assert done.stdout.count("── ") == 1  # no DDP attempt after an unusable environment


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--modes", "fp64"), "--modes 'fp64': unknown mode 'fp64' (choose from fp32, tf32, amp-fp16, amp-bf16)"),
        (("--gpus", "9"), "--gpus 9: this machine has 8 GPUs"),
        (("--batch-size", "0"), "--batch-size 0: must be 1 or more"),
        (("--gpus", "two"), "argument --gpus: invalid int value: 'two'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = gpuwizard(tmp_path, "--simulate", "h100x8-ubuntu2204-fresh", "bench", *args)
    assert done.returncode == 2
    assert done.stderr.startswith(f"gpuwizard: {message}")
    assert done.stderr.count("\n") == 1


def test_a_python_that_is_not_there_is_refused_before_anything_runs(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "bench", "--python", str(tmp_path / "nope"))
    assert (done.returncode, done.stderr) == (
        2,
        f"gpuwizard: --python {tmp_path / 'nope'}: not an executable file\n",
    )
