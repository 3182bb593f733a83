"""The Choose screen offers the CUDA builds that work on this machine, explains the others
without offering them, and a chosen build reaches the core as the request's variant."""

from __future__ import annotations

from pathlib import Path

from textual.containers import VerticalScroll
from textual.widgets import Label, Select

from gpuwizard.core.request import wish_named
from gpuwizard.frontends.app import GpuWizardApp
from gpuwizard.recommend.result import Recommendation
from gpuwizard.screens.choose import ChooseView
from gpuwizard.screens.machine import MachineView
from gpuwizard.setup.flow import Decided
from gpuwizard.sim.backend import sim_backend
from tests.ui.pilots import ViewHarness, shows, until
from tests.ui.test_benchmark import text_of
from tests.ui.test_snapshots import recommend_view


async def test_only_working_builds_are_offered_and_the_others_say_why() -> None:
    view = recommend_view()
    app = ViewHarness(view)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        variant = wish_named("variant")
        tried = dict(view.tried(variant))
        working = [v for v, r in tried.items() if isinstance(r, Recommendation)]
        refused = [v for v, r in tried.items() if not isinstance(r, Recommendation)]
        assert working and refused, tried  # the A100 host on focal: cu126 fits, CUDA 13 does not
        offered = [value for _, value in view.options_of(variant)]
        assert offered == ["auto", *working]
        said = text_of(app, "#builds")
        for variant in refused:
            assert f"{variant}: not offered:" in said and "needs driver" in said
        select = view.query_one("#wish-variant", Select)
        select.value = working[0]
        await pilot.pause()
        assert view.request.variant == working[0]
        await pilot.press("c")
        await pilot.pause()
    decided = app.answers[-1]
    assert isinstance(decided, Decided) and decided.request.variant == working[0]


async def test_the_focused_choice_is_marked_and_moves_with_tab() -> None:
    view = recommend_view()
    app = ViewHarness(view)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.focused, Select) and app.focused.id == "wish-torch"
        labels = [str(label.content) for label in view.query("#choices Label")]
        assert labels[0] == "▸ PyTorch" and not any(t.startswith("▸") for t in labels[1:])
        await pilot.press("tab")
        await pilot.pause()
        labels = [str(label.content) for label in view.query("#choices Label")]
        assert labels[1] == "▸ CUDA build" and labels[0] == "PyTorch"


async def test_keeping_the_installed_driver_is_offered_only_where_one_is_installed() -> None:
    from textual.widgets import SelectionList

    from gpuwizard.core.request import SetupRequest
    from gpuwizard.frontends.stageviews import offers_on
    from gpuwizard.recommend.engine import recommend
    from gpuwizard.recommend.table import load_table
    from gpuwizard.recommend.target import target_from_facts
    from gpuwizard.screens.choose import ChooseView
    from tests.conftest import facts_of

    table = load_table()
    target = target_from_facts(facts_of("v100x4-ubuntu2204-driver535"), table)
    assert target.driver is not None

    def recompute(request: SetupRequest):  # type: ignore[no-untyped-def]
        return recommend(table, target, request)

    view = ChooseView(
        recompute(SetupRequest()), SetupRequest(), recompute, offers_on(table, target)
    )
    app = ViewHarness(view)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        extras = view.query_one("#extras", SelectionList)
        assert str(extras.get_option_at_index(0).prompt) == f"Keep driver {target.driver.version}"
        extras.select("keep_driver")
        await pilot.pause()
        assert view.request.keep_driver
        await pilot.press("c")
        await pilot.pause()
    decided = app.answers[-1]
    assert isinstance(decided, Decided) and decided.request.keep_driver


async def test_choose_shows_from_its_top_with_the_first_choice_focused_and_labelled(
    home: Path,
) -> None:
    """At 80x24 on the default H100 server the choices overflow; the first focus once scrolled
    them by two rows (Textual centres a widget focused before its first layout), hiding the first
    label. The view shows from its top, its first choice focused and named."""
    app = GpuWizardApp(sim_backend("h100x8-ubuntu2204-fresh", home=home / "gpuwizard"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, shows(pilot, MachineView))
        await pilot.press("enter")
        await until(pilot, shows(pilot, ChooseView))
        await pilot.pause(0.3)
        box = app.screen.query_one("#choices", VerticalScroll)
        assert box.max_scroll_y > 0  # the premise: the choices overflow at 80x24
        assert box.scroll_y == 0
        first = box.query(Label).first()
        assert str(first.content).startswith("▸ ") and app.focused is box.query(Select).first()
