"""What ``gpuwizard bench`` shows while a mode runs: the mode, its batch, the samples so far, the
latest img/s and the time since the start, on stderr; a line per sample where stderr is not a
terminal, one line redrawn in place where it is (issue 27 §3)."""

from __future__ import annotations

import io
from collections.abc import Iterator

from gpuwizard.bench import protocol as bp
from gpuwizard.core.safetext import CleanStream
from gpuwizard.frontends.benchprogress import ERASE_LINE, Progress, elapsed_words

STARTED = bp.Started(
    torch="2.14.1", torchvision="0.29.1", cuda="13.0", device="cuda", world_size=1,
    backend=None, gpus=(), model="resnet50", image_size=224, modes=("fp32",), python="3.12",
    compiled=False, channels_last=True,
)  # fmt: skip


def sample(n: int, rate: float, world_size: int = 1) -> bp.Sample:
    return bp.Sample(
        mode="fp32", t=float(n), step=3 * n, batch_size=256, world_size=world_size,
        images_per_s=rate, step_ms=1.0, per_rank=(rate,) * world_size, memory_mib=(0,) * world_size,
    )  # fmt: skip


RESULT = bp.Result(
    mode="fp32", world_size=1, batch_size=256, images_per_s=1059.0, per_gpu=1059.0,
    step_ms=241.7, samples=3, memory_mib=60000,
)  # fmt: skip


def ticking(step_s: float) -> Iterator[float]:
    now = 0.0
    while True:
        yield now
        now += step_s


def progress(redraw: bool) -> tuple[Progress, io.StringIO, io.StringIO]:
    out, live = io.StringIO(), io.StringIO()
    clock = ticking(4.0)
    return Progress(out, live, redraw=redraw, clock=lambda: next(clock)), out, live


def test_off_a_terminal_each_sample_is_one_line_on_the_live_stream() -> None:
    shown, out, live = progress(redraw=False)
    warmup = bp.Warmup(mode="fp32", batch_size=256, step=1, steps=10)
    shown.show([STARTED, warmup, sample(1, 1001.4), sample(2, 1063.0), sample(3, 1059.0)])
    shown.show([RESULT])
    shown.close()
    assert live.getvalue().splitlines() == [
        "  fp32, batch 256: 1 sample, 1,001 img/s now, 4 s elapsed",
        "  fp32, batch 256: 2 samples, 1,063 img/s now, 8 s elapsed",
        "  fp32, batch 256: 3 samples, 1,059 img/s now, 12 s elapsed",
    ]
    assert out.getvalue().splitlines() == [
        "  torch 2.14.1 on CUDA 13.0, 1 process",
        "  fp32 on 1 GPU: 1,059 img/s (1,059 per GPU, batch 256, 3 samples)",
    ]


def test_on_a_terminal_one_line_is_redrawn_and_erased_before_the_next_lasting_line() -> None:
    shown, out, live = progress(redraw=True)
    warmup = bp.Warmup(mode="fp32", batch_size=256, step=2, steps=10)
    shown.show([warmup, sample(1, 1001.4), sample(2, 1063.0)])
    assert live.getvalue() == (
        f"{ERASE_LINE}  fp32, batch 256: warming up, step 2 of 10, 4 s elapsed"
        f"{ERASE_LINE}  fp32, batch 256: 1 sample, 1,001 img/s now, 8 s elapsed"
        f"{ERASE_LINE}  fp32, batch 256: 2 samples, 1,063 img/s now, 12 s elapsed"
    )
    shown.show([RESULT])
    assert live.getvalue().endswith(ERASE_LINE) and "\n" not in live.getvalue()
    assert out.getvalue().startswith("  fp32 on 1 GPU: 1,059 img/s")
    shown.close()
    assert live.getvalue().count(ERASE_LINE) == 4  # nothing left to erase


def test_the_sanitiser_keeps_the_redraw_but_still_cleans_the_text() -> None:
    """The CLI wraps stderr in CleanStream, which drops \\r and escapes: the redraw goes under it."""
    terminal = io.StringIO()
    shown = Progress(io.StringIO(), CleanStream(terminal), redraw=True, clock=lambda: 0.0)  # type: ignore[arg-type]
    shown.show([sample(1, 1000.0)])
    assert (
        terminal.getvalue()
        == f"{ERASE_LINE}  fp32, batch 256: 1 sample, 1,000 img/s now, 0 s elapsed"
    )


def test_samples_count_again_for_each_mode_and_name_the_processes_under_ddp() -> None:
    shown, _, live = progress(redraw=False)
    cpu = bp.Started(**{**STARTED.__dict__, "device": "cpu", "cuda": None})
    again = bp.Warmup(mode="fp32", batch_size=256, step=1, steps=2)
    shown.show([cpu, sample(1, 10.0), sample(2, 11.0), again, sample(1, 19.0, world_size=2)])
    assert live.getvalue().splitlines()[-1] == (
        "  fp32 on 2 CPU processes, batch 256: 1 sample, 19 img/s now, 12 s elapsed"
    )


def test_a_backoff_says_what_comes_next_or_that_nothing_does() -> None:
    shown, out, _ = progress(redraw=False)
    shown.show([
        bp.OutOfMemory(mode="fp32", batch_size=512, next=256),
        bp.OutOfMemory(mode="fp32", batch_size=1, next=None),
    ])  # fmt: skip
    assert out.getvalue().splitlines() == [
        "  fp32: batch 512 does not fit; trying 256",
        "  fp32: batch 1 does not fit; no smaller batch to try",
    ]


def test_elapsed_reads_in_seconds_then_minutes() -> None:
    assert [elapsed_words(s) for s in (0.4, 59.9, 60, 106.2)] == [
        "0 s", "59 s", "1 min 00 s", "1 min 46 s",
    ]  # fmt: skip
