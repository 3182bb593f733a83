"""Issue 30: never install or upgrade to a branch past its end of life when a supported branch
fits; a change of kernel modules stays in the installed branch; integrated GPUs are refused.

The three cases the issue found (drawn from NVIDIA's branch lifecycles, the open modules' lists
of compatible GPUs and Debian's archive), then properties over the table: every GPU the table's
NVIDIA-list rows name and every catalogue architecture, every OS, every installed driver.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwizard.core import gpus
from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.engine import recommend, search
from gpuwizard.recommend.ranking import is_supported
from gpuwizard.recommend.result import Recommendation, Refusal
from gpuwizard.recommend.rules import Candidate, DriverOption, failures
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import ExistingDriver, Target, target_from_spec

TABLE = load_table()


def answer(gpu: str, os: str, driver: str | None = None, flavor: str | None = None, **pins):
    target = target_from_spec(TABLE, [gpu], os, None, driver, flavor)  # type: ignore[arg-type]
    return recommend(TABLE, target, SetupRequest(**pins))


def rejected(result: Recommendation) -> dict[str, str]:
    return {r.option: r.reason for r in result.rejected}


# ---------------------------------------------------------------- the three cases of the issue
@pytest.mark.parametrize("gpu", ["10de:1b06", "V100"], ids=["Pascal GTX 1080 Ti", "Volta V100"])
def test_pre_turing_gpu_with_the_open_r580_modules_switches_to_r580_proprietary(gpu):
    result = answer(gpu, "ubuntu:22.04", "580.95.05", "open")
    assert isinstance(result, Recommendation)
    d = result.driver
    assert (d.action, d.branch, d.flavor, d.version) == (
        "upgrade",
        "580",
        "proprietary",
        "580.178.04",
    )
    assert result.changes[0].startswith(
        "switch the installed R580 driver (580.95.05, open modules) to its proprietary"
    )
    # R580 runs CUDA 13; the wheel is cu126 because cu130/cu132 ship no sm_61/sm_70 kernels
    assert result.torch.variant == "cu126"
    assert "have no kernels for" in rejected(result)["cu130"]
    why = rejected(result)["upgrade to R570 proprietary"]
    assert why.startswith("R570 is PB, end of life since 2026-02; R580 is LTSB, supported")
    assert not any(r.startswith("warning:") for r in result.reasons)


def test_jetson_agx_thor_is_refused_naming_jetpack():
    result = answer("10de:2b00", "ubuntu:24.04")
    assert isinstance(result, Refusal)
    assert result.reason.startswith("Jetson AGX Thor (10de:2b00) is an integrated GPU")
    assert "JetPack" in result.reason and "\n" not in result.reason


@pytest.mark.parametrize(("gpu", "branch"), [("GH200", "580"), ("GB200", "580"), ("GB10", "580")])
def test_grace_based_discrete_systems_keep_their_answers(gpu, branch):
    result = answer(gpu, "ubuntu:24.04")
    assert isinstance(result, Recommendation), getattr(result, "reason", "")
    assert (result.driver.action, result.driver.branch, result.driver.flavor) == (
        "install",
        branch,
        "open",
    )
    assert result.torch.variant == "cu130"


def test_gb10_s_disputed_first_listing_is_said_unconfirmed():
    result = answer("GB10", "ubuntu:24.04")
    assert isinstance(result, Recommendation)
    assert result.driver.min_version == "580.94.13"  # its first open-module listing
    said = [u for u in result.unconfirmed if u.startswith("GB10 with R580")]
    assert said and "580.95.05" in said[0] and "disagree" in said[0]


@pytest.mark.parametrize(
    "pins",
    [{}, {"variant": "cu126"}, {"torch": "2.10.0"}],
    ids=["latest", "the build Debian's R550 runs", "an older torch"],
)
def test_a100_on_debian_13_gets_a_supported_branch_from_nvidia_s_repository(pins):
    result = answer("A100", "debian:13", **pins)
    assert isinstance(result, Recommendation)
    assert (result.driver.source, result.driver.branch) == ("cuda-repo-apt", "580")
    why = rejected(result)["install R550 proprietary from Debian's archive"]
    assert "R550 is PB, end of life since 2025-02" in why or "550.163.01 is older" in why


def test_where_only_end_of_life_branches_fit_a_warning_gives_the_date():
    result = answer("A100", "ubuntu:20.04")
    assert isinstance(result, Recommendation)
    assert result.driver.branch == "570"
    warning = [r for r in result.reasons if r.startswith("warning: R570")]
    assert warning == [
        "warning: R570 is past its end of life (since 2026-02): NVIDIA no longer fixes it, "
        "security fixes included; Ubuntu 20.04 offers no supported branch (only R570, R550, "
        "R535); Ubuntu 22.04 offers R595, R580"
    ]


def test_a_change_of_flavour_stays_in_a_newer_installed_branch():
    # an RTX 5090 needs the open modules: R595's own open ones, not a move to R580
    result = answer("RTX 5090", "ubuntu:24.04", "595.91.07", "proprietary")
    assert isinstance(result, Recommendation)
    assert (result.driver.action, result.driver.branch, result.driver.flavor) == (
        "upgrade",
        "595",
        "open",
    )
    assert rejected(result)["upgrade to R580 open"].startswith("it would leave the installed")


# -------------------------------------------------------------------------------- properties
LISTED = [m for row in TABLE.gpu_listings if (m := gpus.lookup(row.device_id)) is not None]
ONE_PER_CAPABILITY = list(
    {m.compute_capability: m for m in gpus.all_models() if m.is_known}.values()
)
SYSTEMS = [(o.id, o.version) for o in TABLE.operating_systems]
INSTALLED = [
    None,
    ("470.256.02", "proprietary"),
    ("535.247.01", "proprietary"),
    ("535.247.01", "open"),
    ("550.163.01", "open"),
    ("570.133.20", "open"),
    ("570.211.01", "proprietary"),
    ("580.95.05", "open"),
    ("580.95.05", "proprietary"),
    ("580.95.05", None),
    ("595.71.05", "open"),
    ("595.71.05", "proprietary"),
]


def host(model, system, installed) -> Target:
    row = TABLE.os_release(*system)
    assert row is not None
    driver = ExistingDriver(installed[0], installed[1]) if installed else None  # type: ignore[arg-type]
    arch = "aarch64" if model.name.startswith(("GH", "GB")) else "x86_64"
    return Target(
        gpus=(model,),
        os_id=system[0],
        os_version=system[1],
        arch=arch,
        python=row.python3,
        secure_boot="disabled",
        driver=driver,
    )


def fitting_alternatives(t: Target, result: Recommendation) -> list[DriverOption]:
    """Driver options that pass every rule with the chosen torch release and build."""
    found = search(TABLE, t, SetupRequest())
    release = TABLE.torch(result.torch.version)
    assert release is not None
    build = TABLE.build(result.torch.variant, release.version, t.arch)
    return [
        o
        for o in found.options
        if o.action != "keep"
        and not failures(TABLE, t, Candidate(release, result.torch.variant, build, o))
    ]


def assert_no_needless_end_of_life(t: Target, result: Recommendation) -> None:
    d = result.driver
    warned = [r for r in result.reasons if r.startswith(f"warning: R{d.branch} is past")]
    if d.action == "keep" or is_supported(TABLE, d.branch):
        assert not warned, result.reasons
        return
    supported = [o for o in fitting_alternatives(t, result) if is_supported(TABLE, o.branch)]
    assert not supported, f"R{d.branch} chosen though {supported[0].label} fits"
    row = TABLE.branch(d.branch)
    assert row is not None and len(warned) == 1 and f"(since {row.eol})" in warned[0]


def assert_flavour_changes_stay_in_the_branch(t: Target, result: Recommendation) -> None:
    installed, d = t.driver, result.driver
    if installed is None or d.action != "upgrade" or d.branch == installed.branch:
        return
    same = [
        o
        for o in fitting_alternatives(t, result)
        if o.branch == installed.branch and is_supported(TABLE, o.branch)
    ]
    assert not same, f"left R{installed.branch} though {same[0].label} fits"


@settings(max_examples=120, deadline=None)
@given(
    model=st.sampled_from(LISTED + ONE_PER_CAPABILITY),
    system=st.sampled_from(SYSTEMS),
    installed=st.sampled_from(INSTALLED),
)
def test_no_install_or_upgrade_to_an_end_of_life_branch_while_a_supported_one_fits(
    model, system, installed
):
    t = host(model, system, installed)
    result = recommend(TABLE, t)
    if isinstance(result, Refusal):
        assert result.reason
        return
    assert_no_needless_end_of_life(t, result)
    assert_flavour_changes_stay_in_the_branch(t, result)


def test_every_integrated_gpu_of_the_catalogue_is_refused_and_no_discrete_one_is_for_it():
    integrated = [m for m in gpus.all_models() if m.is_integrated]
    assert {m.device_id for m in integrated} >= {"2b00"}
    for model in integrated:
        result = recommend(TABLE, host(model, ("ubuntu", "24.04"), None))
        assert isinstance(result, Refusal) and "JetPack" in result.reason
    for name in ("GH200", "GB200", "GB10", "GB300", "H100"):
        model = gpus.find_models(name)[0]
        assert not model.is_integrated, name
