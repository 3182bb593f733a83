"""The Review view says what it does as its footer does (Enter starts), and counts a reboot that
runs only if loading the driver live fails as what it is."""

from __future__ import annotations

import pytest

from gpuwizard.core.plan import Plan
from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.planner import plan_for
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.screens.review import ReviewView, totals
from tests.conftest import facts_of
from tests.ui.pilots import ViewHarness
from tests.ui.test_hostile_text import shown_text

TABLE = load_table()


def plan_of(profile: str) -> Plan:
    facts = facts_of(profile)
    result = recommend(TABLE, target_from_facts(facts, TABLE), SetupRequest())
    assert isinstance(result, Recommendation)
    return plan_for(facts, result, SetupRequest(), TABLE)[1]


@pytest.mark.parametrize(
    ("profile", "said"),
    [
        pytest.param("t4-debian12-fresh", "a reboot only if needed", id="driver loaded live"),
        pytest.param("a100x4-ubuntu2004-fresh", "2 reboots", id="kernel, then driver"),
        pytest.param("t4-debian12-secureboot", "1 reboot", id="MOK enrollment needs the console"),
    ],
)
def test_the_reboots_are_counted_as_they_will_happen(profile: str, said: str) -> None:
    text = totals(plan_of(profile)).plain
    assert text.endswith(f"· {said}"), text


def test_only_the_fallback_reboot_is_marked_only_if_needed() -> None:
    steps = plan_of("t4-debian12-fresh").steps
    assert [s.id for s in steps if s.only_if_needed] == ["reboot"]
    assert any(s.id == "load-nvidia-driver" and not s.satisfied for s in steps)


async def test_the_text_and_the_footer_name_the_same_key() -> None:
    app = ViewHarness(ReviewView(plan_of("t4-debian12-fresh")))
    async with app.run_test(size=(100, 60)) as pilot:
        await pilot.pause()
        text = shown_text(app.export_screenshot())
    assert "Nothing changes until you press Enter." in text and "⏎ Start" in text
    assert "press s" not in text
