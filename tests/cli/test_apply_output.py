"""What `gpuwizard apply --verbose` prints of a step's output: lines, and a count where a flood was
left out of the event stream."""

from __future__ import annotations

import io

from gpuwizard.frontends.apply import Printer
from gpuwizard.runner import events as ev


def test_verbose_output_says_how_many_lines_a_flood_left_out() -> None:
    out = io.StringIO()
    printer = Printer(out, verbose=True)
    printer.show(ev.LogLines("install-nvidia-driver", ("Get:1 first",)))
    printer.show(ev.LogLines("install-nvidia-driver", ("Get:99999 last",), dropped=99_997))
    assert out.getvalue().splitlines() == [
        "      Get:1 first",
        "      [… 99,997 lines not shown …]",
        "      Get:99999 last",
    ]


def test_without_verbose_no_output_lines_are_printed() -> None:
    out = io.StringIO()
    Printer(out, verbose=False).show(ev.LogLines("step", ("line",), dropped=5))
    assert out.getvalue() == ""
