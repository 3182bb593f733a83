"""The Recommend view's driver branch, kernel modules and Python: only values that work here are
offered, the others say why; a choice made with the keyboard reaches the core as the request,
and that request plans the same as `apply` given the same flags."""

from __future__ import annotations

from textual.widgets import Select

from gpuwizard.core.request import SetupRequest, wish_named
from gpuwizard.frontends.stageviews import offers_on
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.screens.choose import ChooseView
from gpuwizard.setup.flow import Decided
from gpuwizard.setup.plan import make_plan
from tests.cli.helpers import gpuwizard
from tests.conftest import facts_of
from tests.ui.pilots import ViewHarness
from tests.ui.test_benchmark import text_of

TABLE = load_table()


def view_on(profile: str) -> ChooseView:
    target = target_from_facts(facts_of(profile), TABLE)

    def recompute(request: SetupRequest):  # type: ignore[no-untyped-def]
        return recommend(TABLE, target, request)

    return ChooseView(
        recompute(SetupRequest()), SetupRequest(), recompute, offers_on(TABLE, target)
    )


async def test_blackwell_offers_only_open_modules_and_says_why_not_proprietary() -> None:
    view = view_on("rtx5090-ubuntu2404-secureboot")
    app = ViewHarness(view)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        offered = [value for _, value in view.options_of(wish_named("driver_flavour"))]
        assert offered == ["auto", "open"]
        branches = [value for _, value in view.options_of(wish_named("driver_branch"))]
        assert "535" not in branches and "595" in branches
        said = " ".join(text_of(app, "#builds").split())
        assert "proprietary: not offered:" in said
        assert "GeForce RTX 5090 (Blackwell) requires the open kernel modules" in said
        assert "R535: not offered:" in said


async def test_a_branch_chosen_with_the_keyboard_plans_like_apply(tmp_path) -> None:
    profile = "h100x8-ubuntu2204-fresh"
    view = view_on(profile)
    app = ViewHarness(view)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        select = view.query_one("#wish-driver_branch", Select)
        select.focus()
        await pilot.pause()
        labels = [str(label.content) for label in view.query("#choices Label")]
        assert "▸ Driver branch" in labels, "the focused choice is marked"
        options = [value for _, value in view.options_of(wish_named("driver_branch"))]
        await pilot.press("enter")
        for _ in range(options.index("535")):
            await pilot.press("down")
        await pilot.press("enter")
        await pilot.pause()
        assert view.request.driver_branch == "535"
        assert isinstance(view.result, Recommendation) and view.result.driver.branch == "535"
        await pilot.press("c")
        await pilot.pause()
    decided = app.answers[-1]
    assert isinstance(decided, Decided) and decided.request.driver_branch == "535"
    plan, _ = make_plan(TABLE, facts_of(profile), decided.request)
    done = gpuwizard(
        tmp_path, "--simulate", profile, "apply", "--dry-run", "--driver-branch", "535"
    )
    assert done.returncode == 0, done.stderr
    for line in plan.summary:
        assert line in done.stdout
