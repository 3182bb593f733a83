"""What is fetched ahead of a plan's steps (wizard/core/ahead.py): derived from the plan, cache only."""

from __future__ import annotations

import pytest

from gpuwizard.core.ahead import AHEAD_DIR, RESOLVER, UV_TARGET, ahead_ops
from gpuwizard.core.ahead import ahead as ahead_of
from gpuwizard.core.ops import (
    AptInstall,
    AptPrefetch,
    DnfInstall,
    Download,
    Sha256,
    UvPipInstall,
    UvPrefetch,
    WriteFile,
)
from gpuwizard.core.paths import DOWNLOADS_DIR
from gpuwizard.core.plan import Plan
from gpuwizard.core.request import SetupRequest
from gpuwizard.setup.plan import make_plan
from gpuwizard.steps.install_python import UV
from tests.conftest import PROFILE_NAMES, facts_of


def plan_of(table, name: str, request: SetupRequest | None = None) -> tuple[Plan, str]:
    plan, selection = make_plan(table, facts_of(name), request or SetupRequest())
    return plan, selection.env.python


def ahead(plan: Plan, passed: set[str], python: str):
    """As the runner asks before the first step not in ``passed`` runs."""
    return ahead_of(plan, passed, passed, python, next_runs=True)


def todo(plan: Plan) -> list[str]:
    return [s.id for s in plan.steps if not s.satisfied]


def test_the_wheels_of_a_fresh_debian_go_into_uv_s_cache_while_the_driver_builds(table):
    plan, python = plan_of(table, "t4-debian12-fresh")
    passed = set(todo(plan)[: todo(plan).index("install-nvidia-driver")])

    items = ahead(plan, passed, python)

    assert [(i.step, i.what) for i in items] == [
        ("create-env", "pip"),  # the pinned pip the new venv gets
        ("install-torch", "PyTorch's wheels"),
    ]
    fetch_uv, hashes, prefetch = items[1].ops
    planned = plan.step("install-torch").actions
    assert isinstance(fetch_uv, Download) and fetch_uv.dest == f"{AHEAD_DIR}/uv"
    assert fetch_uv.url == next(a for a in planned if isinstance(a, Download)).url
    assert isinstance(hashes, WriteFile) and hashes in planned  # the same hashes file, in the cache
    assert isinstance(prefetch, UvPrefetch)
    uv = next(a for a in planned if isinstance(a, UvPipInstall))
    assert (prefetch.hashes_file, prefetch.index_url) == (uv.hashes_file, uv.index_url)
    argv = prefetch.command().argv
    assert argv[:3] == (f"{AHEAD_DIR}/uv", "pip", "install")
    assert ("--python", RESOLVER, "--python-version", python) == argv[3:7]
    assert argv[7:9] == ("--target", UV_TARGET)
    assert ("--verify-hashes", "-r", uv.hashes_file) == argv[-3:]


def test_the_step_that_runs_now_fetches_for_itself(table):
    plan, python = plan_of(table, "t4-debian12-fresh")
    passed = set(todo(plan)[: todo(plan).index("install-torch")])

    assert ahead(plan, passed, python) == ()


def test_packages_after_a_new_package_source_wait_until_it_is_added(table):
    plan, python = plan_of(table, "t4-debian12-fresh", SetupRequest(needs_nvcc=True))
    steps = todo(plan)
    assert steps.index("add-cuda-repo") < steps.index("install-cuda-toolkit")

    before = ahead(plan, set(steps[: steps.index("add-cuda-repo")]), python)
    after = ahead(plan, set(steps[: steps.index("add-cuda-repo") + 1]), python)

    assert "install-cuda-toolkit" not in [i.step for i in before]
    toolkit = next(i for i in after if i.step == "install-cuda-toolkit")
    planned = next(
        a for a in plan.step("install-cuda-toolkit").actions if isinstance(a, AptInstall)
    )
    assert toolkit.ops == (AptPrefetch(planned.packages, planned.recommends),)


def test_apt_s_prefetch_names_the_same_packages_with_the_same_recommends(table):
    op = AptPrefetch(("nvidia-open", "nvidia-driver-pinning-580"), recommends=False)
    argv = op.command().argv
    assert argv == (
        "gpuwizard-apt-fetch",
        "--no-install-recommends",
        "nvidia-open",
        "nvidia-driver-pinning-580",
    )
    assert AptPrefetch(("a",)).command().argv == ("gpuwizard-apt-fetch", "a")
    assert op.command().env["DEBIAN_FRONTEND"] == "noninteractive"


def test_each_item_that_runs_uv_fetches_it_to_the_cache():
    """Whole items (one may be done in an earlier round whose uv is gone); the fetching process
    fetches the same download once a round (tests/runner/test_prefetch.py)."""
    fetch = Download("pypi:uv==1", UV, Sha256("0" * 64), member="uv")
    install = UvPipInstall(UV, "/env", ("torch==1",), "https://example/simple")
    first = ahead_ops((fetch, install), "3.12")
    second = ahead_ops((fetch, UvPipInstall(UV, "/env", ("numpy==1",))), "3.12")
    assert first[0] == second[0] and first[0].dest == f"{AHEAD_DIR}/uv"


def test_what_is_not_a_download_or_leaves_the_cache_is_not_fetched_ahead():
    key = Download("https://example/key.pub", "/usr/share/keyrings/k.gpg", Sha256("0" * 64))
    assert ahead_ops((key, WriteFile("/etc/apt/sources.list.d/x.list", "deb x")), "3.12") == ()
    assert ahead_ops((DnfInstall(("nvidia-driver",)),), "3.12") == ()  # dnf's lock (ahead.py)
    installer = Download(
        "https://example/Miniforge.sh", f"{DOWNLOADS_DIR}/Miniforge.sh", Sha256("1" * 64)
    )
    assert ahead_ops((installer,), "3.12") == (installer,)


@pytest.mark.parametrize("name", [n for n in PROFILE_NAMES if n != "nogpu-ubuntu2204"])
def test_every_profile_fetches_ahead_into_caches_only(table, name):
    plan, python = plan_of(table, name, SetupRequest(needs_nvcc=True, cudnn=True, dcgm=True))
    steps = todo(plan)
    for done in range(len(steps)):
        for item in ahead(plan, set(steps[:done]), python):
            assert item.step in steps[done + 1 :]
            for op in item.ops:
                match op:
                    case Download():
                        assert op.dest.startswith(DOWNLOADS_DIR + "/")
                    case WriteFile():
                        assert op.path.startswith(DOWNLOADS_DIR + "/")
                    case UvPrefetch():
                        assert op.target == UV_TARGET and op.uv == f"{AHEAD_DIR}/uv"
                    case AptPrefetch():
                        pass


def test_while_a_step_runs_the_next_one_is_fetched_for(table):
    plan, python = plan_of(table, "t4-debian12-fresh")
    steps = todo(plan)
    done = set(steps[: steps.index("create-env")])  # create-env runs now: install-torch is next

    running = ahead_of(plan, done, {*done, "create-env"}, python, next_runs=False)
    after = {*done, "create-env"}
    before_torch = ahead_of(plan, after, after, python, next_runs=True)

    assert [i.step for i in running] == ["install-torch"]
    assert before_torch == ()  # install-torch is about to run: it downloads for itself


def test_a_running_source_step_holds_back_the_packages_after_it(table):
    plan, python = plan_of(table, "t4-debian12-fresh")
    steps = todo(plan)
    assert steps.index("add-cuda-repo") < steps.index("install-nvidia-driver")
    done = set(steps[: steps.index("add-cuda-repo")])

    running = ahead_of(plan, done, {*done, "add-cuda-repo"}, python, next_runs=False)
    added = ahead_of(
        plan, {*done, "add-cuda-repo"}, {*done, "add-cuda-repo"}, python, next_runs=False
    )

    assert "install-nvidia-driver" not in [i.step for i in running]
    assert "install-nvidia-driver" in [i.step for i in added]
