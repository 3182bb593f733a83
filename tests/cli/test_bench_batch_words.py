""" "The largest batch that fits" was never true: the worker sizes the batch to the GPU's memory
(128 images of 224 px per 40 GiB, twice that with AMP, a power of two up to 1024) and halves it
until a step fits. What the flag's help, the view before the run, the verdict and the doctor say
is what it does (issue 27 §3), and the numbers the help quotes are the worker's."""

from __future__ import annotations

import pytest

from gpuwizard.bench.protocol import OutOfMemory
from gpuwizard.bench.references import load_references
from gpuwizard.bench.verdict import judge
from gpuwizard.doctor.training import oom_remedies
from gpuwizard.frontends.cliargs import build_parser
from gpuwizard.frontends.stageviews import bench_about
from tests.bench.test_worker import load_worker
from tests.conftest import facts_of


def bench_help(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_the_batch_flag_says_what_the_default_does(capsys: pytest.CaptureFixture[str]) -> None:
    said = bench_help(capsys)
    assert (
        "--batch-size N per GPU (default: sized to the GPU's memory, 128 images per 40 GiB, "
        "twice that with AMP, a power of two up to 1024, halved until a step fits; not a search "
        "for the largest batch)" in said
    )
    assert "the largest that fits" not in said


def test_the_help_quotes_the_workers_own_numbers() -> None:
    candidates = load_worker().batch_candidates
    assert candidates(None, "fp32", 40960, 224)[0] == 128
    assert candidates(None, "tf32", 40960, 224)[0] == 128
    assert candidates(None, "amp-bf16", 40960, 224)[0] == 256
    assert candidates(None, "amp-fp16", 10 * 40960, 224)[0] == 1024  # capped
    assert candidates(None, "fp32", 143771, 224) == [256, 128, 64, 32, 16, 8, 4, 2, 1]


def test_no_other_text_claims_the_largest_batch() -> None:
    facts = facts_of("h100x8-ubuntu2204-fresh")
    assert "a batch sized to the GPU's memory" in bench_about(1)
    assert "largest batch" not in bench_about(1) + oom_remedies(facts, None)
    verdict = judge(
        device="cuda",
        gpu_name="A100 SXM4 40GB",
        results=[],
        references=load_references(),
        ooms=[OutOfMemory("fp32", 256, 128)],
    )
    assert "fp32: batch 256 did not fit; backed off to 128" in verdict.causes
