"""A new wish is one declaration (issue 25): a throwaway field added to ``SetupRequest`` in
``core/request.py``, and nowhere else, is an option on the command line, a checkbox in the
Choose view, a key in answers.yaml that loads back, and a named difference between requests.

The declaration is made in a copy of the package (the only file changed is core/request.py),
and everything is checked there in a fresh interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
THROWAWAY = """
    sparkles: bool = wish(
        False, flag="--sparkles", label="Sparkles", group="parts", widget="check",
        help="also add sparkles (a wish only this test declares)",
    )
"""
ANCHOR = "\n    @property\n    def pinned(self)"

PROBE = textwrap.dedent(
    """
    import asyncio
    import contextlib
    import io

    from textual.widgets import SelectionList

    from gpuwizard.core.request import SetupRequest, differences
    from gpuwizard.export.answers import load_answers, render_answers
    from gpuwizard.export.source import ExportSource
    from gpuwizard.frontends.cliargs import build_parser, wishes_given
    from gpuwizard.frontends.stageviews import offers_on
    from gpuwizard.machine.detect import detect_host
    from gpuwizard.recommend.engine import recommend
    from gpuwizard.recommend.table import load_table
    from gpuwizard.recommend.target import target_from_facts
    from gpuwizard.screens.choose import ChooseView
    from gpuwizard.setup.plan import make_plan
    from gpuwizard.sim.profiles import profile_host
    from tests.ui.pilots import ViewHarness

    # the command line: the option, its help, and the request it gives
    args = build_parser().parse_args(["apply", "--sparkles"])
    assert wishes_given(args).sparkles is True, "the flag sets the wish"
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
        build_parser().parse_args(["export", "--help"])
    assert "--sparkles" in shown.getvalue() and "a wish only this test declares" in shown.getvalue()

    # the differences between two requests
    assert differences(SetupRequest(), SetupRequest(sparkles=True)) == [
        "--sparkles: the run in progress has off, this command asks on"
    ]

    # answers.yaml: written, checked and read back
    table = load_table()
    facts = detect_host(profile_host("h100x8-ubuntu2204-fresh"))
    plan, selection = make_plan(table, facts, SetupRequest(sparkles=True))
    text = render_answers(ExportSource(plan, selection, facts))
    assert "  sparkles: true" in text, text
    assert load_answers(text).request.sparkles is True

    # the Choose view: a checkbox that changes the request
    target = target_from_facts(facts, table)
    recompute = lambda request: recommend(table, target, request)
    view = ChooseView(recompute(SetupRequest()), SetupRequest(), recompute, offers_on(table, target))

    async def choose() -> None:
        app = ViewHarness(view)
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.pause()
            boxes = view.query_one("#extras", SelectionList)
            labels = [str(boxes.get_option_at_index(i).prompt) for i in range(boxes.option_count)]
            assert "Sparkles" in labels, labels
            boxes.select("sparkles")
            await pilot.pause()
            assert view.request.sparkles is True

    asyncio.run(choose())
    print("sparkles everywhere")
    """
)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gpuwizard as installed (wizard/, screens/, steps/ mounted), one wish added."""
    root = tmp_path_factory.mktemp("with-a-new-wish")
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "wizard", root / "gpuwizard", ignore=skip)
    shutil.copytree(REPO / "screens", root / "gpuwizard" / "screens", ignore=skip)
    shutil.copytree(REPO / "steps", root / "gpuwizard" / "steps", ignore=skip)
    declared = root / "gpuwizard" / "core" / "request.py"
    text = declared.read_text(encoding="utf-8")
    assert text.count(ANCHOR) == 1, "the request's first method moved: update the anchor"
    declared.write_text(text.replace(ANCHOR, THROWAWAY + ANCHOR), encoding="utf-8")
    return root


@pytest.mark.timeout(120)
def test_a_wish_declared_once_reaches_the_cli_the_choose_view_answers_and_differences(
    package: Path,
) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(package), str(REPO)]))
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=package, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "sparkles everywhere"


def test_the_copy_is_the_package_under_test(package: Path) -> None:
    """The probe imports the copy, not the installed package (else it proves nothing)."""
    env = dict(os.environ, PYTHONPATH=str(package))
    done = subprocess.run(
        [sys.executable, "-c", "import gpuwizard.core.request as r; print(r.__file__)"],
        env=env, cwd=package, capture_output=True, text=True,
    )  # fmt: skip
    assert done.stdout.strip().startswith(str(package)), done.stdout + done.stderr
