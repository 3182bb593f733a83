"""``gpuwizard bench`` on this machine (no --simulate): the real worker in a Python with torch, on
the CPU, its progress on stderr and nothing but the JSON on stdout (issue 27 §3). The state
folder is the test's, so nothing lands in /var/lib/gpuwizard when the tests run as root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwizard.frontends.benchcmd import run_bench
from gpuwizard.frontends.cli import real_backend
from gpuwizard.frontends.cliargs import build_parser


@pytest.mark.slow
def test_a_real_cpu_run_shows_its_samples_on_stderr_and_only_json_on_stdout(
    torch_python: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = build_parser().parse_args(
        ["bench", "--python", torch_python, "--gpus", "0", "--modes", "fp32", "--no-dataload",
         "--no-ddp", "--json"]
    )  # fmt: skip
    assert run_bench(args, real_backend(tmp_path)) == 0
    captured = capsys.readouterr()
    results = json.loads(captured.out)  # nothing but the JSON
    (result,) = results["results"]
    live = [line for line in captured.err.splitlines() if line.startswith("  fp32, batch 8: ")]
    assert len(live) == result["samples"] >= 1
    assert live[0].startswith("  fp32, batch 8: 1 sample, ") and " img/s now, " in live[0]
    assert captured.err.startswith("benchmark: CPU, with ")
    assert f"results in {tmp_path}/bench/" in captured.err
