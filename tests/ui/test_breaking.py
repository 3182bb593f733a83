"""Lines break as a person breaks them: at spaces, and inside a word too long for the line after a
/ or - (paths, package names); only a run with neither is cut at the line's end."""

from __future__ import annotations

import itertools

import pytest
from rich.console import Console
from rich.table import Table

from gpuwizard.screens.breaking import BreakingText, break_offsets


def rows(text: str, width: int) -> list[str]:
    cuts = [0, *break_offsets(text, width), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(cuts)]


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        pytest.param("short words wrap at spaces only", 12, ["short words ", "wrap at ", "spaces only"], id="words"),
        pytest.param("packages: linux-headers-6.1.0-57-cloud-amd64", 33,
                     ["packages: ", "linux-headers-6.1.0-57-cloud-", "amd64"], id="package name at a dash"),
        pytest.param("files: /etc/apt/sources.list.d/cuda-debian12-x86_64.list", 33,
                     ["files: ", "/etc/apt/sources.list.d/cuda-", "debian12-x86_64.list"], id="path at a dash"),
        pytest.param("/opt/gpuwizard/envs/pytorch", 22, ["/opt/gpuwizard/envs/", "pytorch"], id="path at a slash"),
        pytest.param("x" * 25 + " end", 10, ["x" * 10, "x" * 10, "xxxxx end"], id="nothing to break at"),
        pytest.param("fits", 10, ["fits"], id="fits"),
    ],
)  # fmt: skip
def test_break_offsets(text: str, width: int, expected: list[str]) -> None:
    assert rows(text, width) == expected
    assert all(len(row.rstrip()) <= width for row in rows(text, width))


def test_a_table_column_of_paths_breaks_them_at_slashes() -> None:
    table = Table("Step", "Changes", width=50)
    table.add_row(BreakingText("Create the Python environment /opt/gpuwizard/envs/pytorch"),
                  BreakingText("packages: linux-headers-6.1.0-57-cloud-amd64"))  # fmt: skip
    console = Console(width=50, record=True)
    console.print(table)
    shown = console.export_text()
    assert "/opt/gpuwizard/envs/" in shown and "…" not in shown, "never cut off with an ellipsis"
    assert "amd6\n" not in shown and "debia\n" not in shown


def test_in_a_static_it_is_rendered_through_rich() -> None:
    text = BreakingText("a/b")
    assert text.visualize() is text  # Textual renders it with Rich, through its own wrap
