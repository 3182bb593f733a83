"""ThroughputChart: the benchmark's live chart, drawn by textual-plotext (docs/decisions.md).

Images/s per GPU on the y axis, the benchmark's elapsed seconds on the x axis, one line per mode
(and per GPU count for DDP), and each line's published reference as a dotted line in its colour.
It draws what ``ChartData`` holds; it never decides which reference applies (wizard/bench/chart.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from textual_plotext import PlotextPlot

from gpuwizard.bench.chart import ChartData, ReferenceMark

COLOURS = ("cyan", "green", "magenta", "orange", "red", "blue")
RICH_COLOURS = {"orange": "dark_orange"}
"""Plotext's colour names that Rich spells otherwise (for the legend under a small chart)."""
LEGEND_MIN_HEIGHT = 14
"""Below this many rows plotext's legend would hide the lines: the legend goes under the chart."""
Y_LABEL = "img/s per GPU"
X_LABEL = "elapsed s"
TICK_STEPS = (1, 2, 2.5, 5, 10)
"""Tick spacings per power of ten: the y axis reads 0, 1,000, 2,000, 3,000, never 3284.2."""


def y_ticks(top: float, most: int = 5) -> list[float]:
    """Round values from 0 to ``top`` (at most ``most`` of them) for the y axis."""
    if top <= 0:
        return [0.0]
    raw = top / max(most - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in TICK_STEPS if m * power >= raw)
    return [i * step for i in range(int(top // step) + 1)]


def tick_label(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == 0 else f"{value:g}"


class ThroughputChart(PlotextPlot):
    DEFAULT_CSS = "ThroughputChart { height: 1fr; min-height: 8; }"

    def __init__(self, **kwargs: str) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.data = ChartData()
        self.marks: dict[str, ReferenceMark] = {}
        self.draw()

    def show(self, data: ChartData, marks: Sequence[ReferenceMark]) -> None:
        self.data = data
        self.marks = {mark.key: mark for mark in marks}
        self.draw()

    def colour(self, key: str) -> str:
        keys = list(self.data.series)
        return COLOURS[keys.index(key) % len(COLOURS)] if key in keys else "gray"

    def rich_colour(self, key: str) -> str:
        colour = self.colour(key)
        return RICH_COLOURS.get(colour, colour)

    @property
    def legend_inside(self) -> bool:
        return self.size.height >= LEGEND_MIN_HEIGHT

    def on_resize(self) -> None:
        self.draw()

    def draw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel(X_LABEL)
        plt.ylabel(Y_LABEL)
        end = max(self.data.elapsed, 1.0)
        top = max([self.data.top, *(m.per_gpu for m in self.marks.values())], default=0.0)
        ceiling = max(top * 1.1, 1.0)
        plt.xlim(0, end)
        plt.ylim(0, ceiling)
        ticks = y_ticks(ceiling)
        plt.yticks(ticks, [tick_label(value) for value in ticks])
        for key, points in self.data.series.items():
            colour = self.colour(key)
            mark = self.marks.get(key)
            if mark is not None:
                plt.plot([0, end], [mark.per_gpu] * 2, marker="·", color=colour)
            xs, ys = [x for x, _ in points], [y for _, y in points]
            label = key if self.legend_inside else None
            plt.plot(xs, ys, marker="braille", color=colour, label=label)
        self.refresh()
