"""Every Python gpuwizard starts runs isolated (issue 28): nothing in the folder it was started
from is imported, whoever planted it there.

``python -m X`` and ``python -c S`` put the current folder first on ``sys.path``. As root, in a
folder another user can write, a planted ``argparse.py`` ran as uid 0 in the runner. Here such a
folder is planted with modules named like the standard library's, pip's, venv's, torch's and
gpuwizard's own, each of which records that it ran; then apply, the runner, the benchmark,
``recommend --online`` and deploy.sh are run from it, on this machine and on a simulated one,
and nothing planted may have run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwizard.bench.launch import BenchJob, BenchSpec
from gpuwizard.core.isolation import ISOLATED, flags_for, own_python
from gpuwizard.core.ops import Download, NoPin, Venv
from gpuwizard.core.plan import Action, StepPlan
from gpuwizard.export.bash import render_bash
from gpuwizard.frontends import cli
from gpuwizard.machine import Machine
from gpuwizard.machine.detect import local_host
from gpuwizard.runner.control import launch
from gpuwizard.runner.executor import Executor, Tools
from gpuwizard.sim.pathshims import make_pathshims, run_until_done
from gpuwizard.sim.sandbox import create, place_for
from tests.bench.conftest import torch_python  # noqa: F401 - the fixture
from tests.export.deploy_harness import Deploy, source_with
from tests.realhost.conftest import GPUWIZARD
from tests.realhost.test_runner import empty_run

PLANTED = (
    "argparse.py", "json.py", "shlex.py", "hashlib.py", "base64.py", "zipfile.py", "tempfile.py",
    "pip/__init__.py", "pip/__main__.py", "venv/__init__.py", "venv/__main__.py",
    "ensurepip/__init__.py", "torch/__init__.py", "torch/distributed/__init__.py",
    "torch/distributed/run.py", "gpuwizard/__init__.py",
)  # fmt: skip
NOBODY = 65534


def step(step_id: str, *actions: Action) -> StepPlan:
    return StepPlan(step_id, f"Step {step_id}", "why", actions)


def plant(folder: Path, marker: Path) -> Path:
    """Fill ``folder`` with modules that append their name to ``marker`` when imported."""
    for name in PLANTED:
        module = folder / name
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text(
            "import os\n"
            f"with open({str(marker)!r}, 'a') as planted:\n"
            f"    planted.write({name!r} + ' ran in ' + str(os.getpid()) + '\\n')\n"
        )
    os.chown(folder, NOBODY, NOBODY)  # as in the report: a folder another user owns and writes
    return folder


class Planted:
    def __init__(self, tmp_path: Path) -> None:
        self.marker = tmp_path / "planted-ran.txt"
        self.folder = plant(tmp_path / "shared", self.marker)
        self.home = tmp_path / "home"
        self.home.mkdir()

    def ran(self) -> str:
        return self.marker.read_text() if self.marker.exists() else ""

    def gpuwizard(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """The installed command, typed in the planted folder."""
        return subprocess.run(
            [str(GPUWIZARD), *args],
            capture_output=True,
            text=True,
            cwd=self.folder,
            env={**os.environ, "XDG_STATE_HOME": str(self.home), "GPUWIZARD_SIM_BENCH_PACE": "0", **env},
            timeout=300,
            check=False,
        )  # fmt: skip


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    if os.geteuid() != 0:
        pytest.skip("the report's case is root's; planting for another user needs chown")
    return Planted(tmp_path)


def test_the_planted_modules_would_run_without_isolation(planted: Planted) -> None:
    """The fixture is real: a Python started there the old way imports them (json.py; under
    coverage, whose start-up in every Python imports argparse first, argparse.py)."""
    subprocess.run([sys.executable, "-m", "json.tool", "--help"], cwd=planted.folder, capture_output=True, check=False)  # fmt: skip
    assert "json.py ran" in planted.ran() or "argparse.py ran" in planted.ran()


@pytest.mark.slow
def test_a_simulated_apply_and_benchmark_run_nothing_planted(planted: Planted) -> None:
    """The simulated runner and every stand-in (the shims, the environment's Python) are
    Python too: they are started isolated, and the stand-ins refuse a Python without -I."""
    profile = ("--simulate", "h100x8-ubuntu2204-fresh")
    codes = [planted.gpuwizard(*profile, "apply", "--yes") for _ in range(2)]
    assert [c.returncode for c in codes] == [10, 0], codes[-1].stdout + codes[-1].stderr
    bench = planted.gpuwizard(*profile, "bench", "--json")
    assert bench.returncode == 0, bench.stderr
    assert planted.ran() == ""


def test_apply_dry_run_on_this_machine_runs_nothing_planted(planted: Planted) -> None:
    done = planted.gpuwizard("apply", "--dry-run")
    assert done.returncode in (0, 3), done.stderr  # 3: no NVIDIA GPU here
    assert planted.ran() == ""


@pytest.mark.parametrize(
    "machine",
    [
        pytest.param(("recommend", "--gpu", "H100", "--os", "ubuntu:22.04"), id="described"),
        pytest.param(("--simulate", "h100x8-ubuntu2204-fresh", "recommend"), id="simulated"),
    ],
)
def test_recommend_online_asks_its_own_pip_not_a_planted_one(
    planted: Planted, machine: tuple[str, ...]
) -> None:
    # An index that refuses at once: only where pip is imported from matters here.
    index = {"PIP_INDEX_URL": "https://127.0.0.1:9/simple", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2"}
    done = planted.gpuwizard(*machine, "--online", **index)
    assert done.returncode == 0, done.stderr
    assert planted.ran() == ""


def test_the_real_runner_runs_nothing_planted(
    planted: Planted, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The runner (-m gpuwizard.runner), for real, launched from the planted folder over an
    empty plan (a real step would change this machine; a failed one writes the login banner)."""
    monkeypatch.chdir(planted.folder)
    state = tmp_path / "state"
    empty_run(state)
    process = launch(cli.real_backend(state).runner, state)
    assert process.wait(timeout=120) == 0, (state / "runner.log").read_text()
    assert planted.ran() == ""


def test_the_real_downloader_runs_nothing_planted(
    planted: Planted, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """gpuwizard-fetch (-m gpuwizard.runner.fetch), for real, through the runner's executor,
    from the planted folder; the download fails (a closed port), changing nothing."""
    monkeypatch.chdir(planted.folder)
    lines: list[str] = []
    executor = Executor(
        local_host(),
        Tools(),
        tmp_path / "logs",
        None,
        lambda _step, shown, _dropped: lines.extend(shown),
    )
    fetch = Download("https://127.0.0.1:9/k.pub", str(tmp_path / "k.gpg"), NoPin(), dearmor=True)
    outcome = executor("add-cuda-repo", fetch)
    assert not outcome.ok
    assert any(line.startswith("gpuwizard-fetch: ") for line in lines), lines
    assert planted.ran() == ""


def test_deploy_sh_runs_venv_and_the_key_check_isolated(planted: Planted, tmp_path: Path) -> None:
    """The exported script, run from the planted folder with the real python3: its `cd /` and
    `-I` keep `python3 -m venv` and its key check away from what was planted."""
    machine = Deploy(tmp_path / "deploy")
    plant(machine.folder, planted.marker)  # the harness runs the script in its own folder
    key = Path(__file__).parents[1] / "runner" / "keys" / "nvidia-docker-gpgkey.asc"
    machine.serve("https://example.com/key.pub", key.read_bytes())
    env = tmp_path / "env"
    machine.write_script(
        source_with(
            [
                step("create-env", Venv(sys.executable, str(env))),
                step("get", Download("https://example.com/key.pub", "/k.gpg", NoPin(), dearmor=True)),
            ]
        )
    )  # fmt: skip
    result = machine.run()
    assert result.code == 0, result.output
    assert (env / "pyvenv.cfg").exists(), "the real venv module made it"
    assert planted.ran() == ""


def test_a_simulated_deploy_sh_runs_nothing_planted(planted: Planted, tmp_path: Path) -> None:
    from tests.export.conftest import source_for

    sandbox = create(place_for("t4-debian12-fresh", tmp_path / "sim"))
    plant(sandbox.directory, planted.marker)  # run_script starts it in the sandbox's folder
    script = tmp_path / "deploy.sh"
    script.write_text(render_bash(source_for("t4-debian12-fresh"), test_build=True))
    runs = run_until_done(script, sandbox, make_pathshims(tmp_path / "bin"))
    assert runs[-1].code == 0, runs[-1].output
    assert planted.ran() == ""


@pytest.mark.slow
def test_the_real_benchmark_runs_torchrun_isolated(
    planted: Planted,
    torch_python: str,  # noqa: F811 - the fixture imported above
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """`python -m torch.distributed.run` (the DDP phase), for real on the CPU, started from a
    folder with a planted torch/ package: the environment's own torch runs."""
    monkeypatch.chdir(planted.folder)
    env = str(Path(torch_python).parent.parent)
    python = Machine(name="here", host=local_host, state_dir=tmp_path).python_in(env)
    assert python[1:] == (ISOLATED,)
    tiny = ("--model", "resnet18", "--image-size", "32", "--warmup", "1", "--steps", "2")
    spec = BenchSpec(python=python, gpus=0, modes=("fp32",), batch_size=2, extra=tiny)
    job = BenchJob(spec, tmp_path / "bench")
    job.start()
    outcome = job.wait(300)
    assert outcome.ok, outcome.problems
    assert planted.ran() == ""


def test_gpuwizard_s_own_python_is_isolated_unless_that_would_hide_gpuwizard() -> None:
    assert own_python("-m", "x")[1:] == (ISOLATED, "-m", "x"), "installed in site-packages here"
    site = "/usr/lib/python3/dist-packages"
    assert flags_for(site, ["/home/a/.local/lib/python3.11/site-packages"], (3, 11)) == ("-I",)
    user = "/home/a/.local/lib/python3.11/site-packages"
    assert flags_for(user, [user, "/src"], (3, 11)) == ("-P",), "-I would hide the user site"
    assert flags_for("/src/build", ["/src"], (3, 12)) == ("-P",), "found through PYTHONPATH"
    assert flags_for("/src/build", ["/src"], (3, 10)) == (), "3.10 has no -P: the cwd is / then"
