"""Properties of the engine over the whole catalogue and every supported OS."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwizard.core import gpus
from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.result import Recommendation, Refusal
from gpuwizard.recommend.rules import Candidate, failures
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import Target

TABLE = load_table()
MODELS = gpus.all_models()
SYSTEMS = [(o.id, o.version) for o in TABLE.operating_systems]
# One OS per distinct way of offering drivers (source, module streams, branches, Python): the
# engine sees nothing else of an OS, so the whole-catalogue sweep needs no more.
REPRESENTATIVE = list(
    {
        (o.driver_source, o.dnf_modules, o.driver_branches, o.python3): (o.id, o.version)
        for o in TABLE.operating_systems
    }.values()
)


def target(models, os_id, version, driver=None):
    return Target(
        gpus=tuple(models),
        os_id=os_id,
        os_version=version,
        python=TABLE.os_release(os_id, version).python3,
        secure_boot="disabled",
    )  # type: ignore[union-attr]


def check(result: Recommendation | Refusal, t: Target) -> None:
    if isinstance(result, Refusal):
        assert result.reason.strip(), "a refusal must say why"
        return
    winner = Candidate(
        TABLE.torch(result.torch.version),
        result.torch.variant,
        TABLE.build(result.torch.variant, result.torch.version, t.arch),
        _option(result),
    )  # type: ignore[arg-type]
    assert failures(TABLE, t, winner) == [], "the chosen combination passes every rule"
    assert all(r.option and r.reason for r in result.rejected), "every rejection has a reason"
    assert result.reasons


def _option(result: Recommendation):
    from gpuwizard.recommend.rules import DriverOption

    return DriverOption(
        result.driver.action, result.driver.branch, result.driver.version, result.driver.flavor
    )


@pytest.mark.slow  # 5-12 s per OS: the whole GPU catalogue through the engine
@pytest.mark.parametrize(("os_id", "version"), REPRESENTATIVE)
def test_every_gpu_in_the_catalogue_gets_a_recommendation_or_a_reasoned_refusal(os_id, version):
    for model in MODELS:
        t = target([model], os_id, version)
        check(recommend(TABLE, t), t)


def _dropped_by_nvidia_s_lists(model) -> bool:
    """NVIDIA's lists stopped naming it (A100 PCIe 40GB 20b1: R470), or name no open-module
    release for a GPU that needs the open modules (HGX B200 168GB 2909)."""
    listing = TABLE.gpu_listing(model.device_id)
    if listing is None:
        return False
    return bool(listing.last_branch) or (listing.open is None and model.open_modules == "required")


def test_every_turing_or_newer_datacenter_gpu_is_served_on_ubuntu_2204():
    for model in MODELS:
        if (
            model.compute_capability
            and float(model.compute_capability) >= 7.5
            and model.compute_capability != "11.0"
            and not _dropped_by_nvidia_s_lists(model)
        ):
            result = recommend(TABLE, target([model], "ubuntu", "22.04"))
            assert isinstance(result, Recommendation), (model.name, getattr(result, "reason", ""))


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.sampled_from(MODELS), min_size=1, max_size=3),
    system=st.sampled_from(SYSTEMS),
    driver=st.sampled_from(
        [None, "470.256.02", "535.247.01", "570.133.20", "580.95.05", "595.71.05"]
    ),
    torch=st.sampled_from([None, "2.15.0", "2.14.1", "2.8.0", "2.5.1", "2.0.1"]),
    keep=st.booleans(),
)
def test_mixed_hosts_and_pins_always_get_an_answer_with_reasons(picks, system, driver, torch, keep):
    from gpuwizard.recommend.target import ExistingDriver

    base = target(picks, *system)
    t = Target(**{**base.__dict__, "driver": ExistingDriver(driver, None) if driver else None})
    result = recommend(TABLE, t, SetupRequest(torch=torch, keep_driver=keep and driver is not None))
    check(result, t)


# ------------------------------------------------------------------ what a recommendation claims
# For any GPU of the PCI table, OS, torch release (or latest), Python and platform: the chosen
# build compiles the GPU's architecture (a cubin of the same major and a lower or equal minor, the
# only kind the table's builds carry), the driver meets the build's and the GPU's minimum, the
# Python is inside the release's range, and a refusal names sentences that rules really produce.

from gpuwizard.core.version import Version, at_least, variant_cuda  # noqa: E402
from gpuwizard.recommend.engine import search  # noqa: E402
from gpuwizard.recommend.rules import covers, driver_floor_for  # noqa: E402
from gpuwizard.recommend.target import ExistingDriver  # noqa: E402

KNOWN = [m for m in MODELS if m.is_known]
RELEASES = [r.version for r in TABLE.torch_releases]
ONE_PER_CAPABILITY = list({m.compute_capability: m for m in KNOWN}.values())
DRIVERS = [None, "470.256.02", "535.309.01", "570.211.01", "580.178.04", "595.99.02"]
PYTHONS = [None, "3.6", "3.8", "3.10", "3.12", "3.14", "3.15"]


def host(models, system, arch="x86_64", python=None, driver=None) -> Target:
    row = TABLE.os_release(*system)
    return Target(
        gpus=tuple(models),
        os_id=system[0],
        os_version=system[1],
        arch=arch,
        python=python or row.python3,  # type: ignore[union-attr]
        secure_boot="disabled",
        driver=ExistingDriver(driver, None) if driver else None,
    )


def holds(t: Target, choices: SetupRequest) -> Recommendation | Refusal:
    result = recommend(TABLE, t, choices)
    if isinstance(result, Recommendation):
        assert_recommendation_holds(t, choices, result)
    else:
        assert_refusal_names_real_failures(t, choices, result)
    return result


def assert_recommendation_holds(t: Target, choices: SetupRequest, result: Recommendation) -> None:
    release = TABLE.torch(result.torch.version)
    assert release is not None
    if choices.torch:
        assert result.torch.version == choices.torch
    build = TABLE.build(result.torch.variant, release.version, t.arch)
    assert build is not None, "the build exists for this platform"
    assert result.torch.variant in release.builds_for(t.arch)
    for gpu in t.gpus:
        assert covers(build.arches, gpu.compute_capability or ""), (gpu.name, build.arches)
        floor = driver_floor_for(TABLE, gpu)
        assert floor is None or at_least(result.driver.version, floor)
        if gpu.last_driver_branch:
            assert int(result.driver.branch) <= int(gpu.last_driver_branch)
    cuda_floor = TABLE.driver_floor(variant_cuda(result.torch.variant))
    assert cuda_floor is None or at_least(result.driver.version, cuda_floor)
    assert Version.parse(result.driver.min_version) <= Version.parse(result.driver.version)
    low, high = (Version.parse(v) for v in release.python_for(t.arch))
    assert low <= Version.parse(result.python.version) <= high
    assert result.torch.python_range == release.python_for(t.arch)


def assert_refusal_names_real_failures(t: Target, choices: SetupRequest, result: Refusal) -> None:
    assert result.reason.strip()
    if not result.reasons:  # a refusal that needs no search (no GPU, unknown GPU or OS)
        return
    found = search(TABLE, t, choices)
    assert found.winner is None
    tried = found.tried or ((found.closest,) if found.closest else ())
    produced = {m for c in tried for m in failures(TABLE, t, c, choices.needs_nvcc)}
    assert set(result.reasons) <= produced, "every reason is a rule's sentence for a candidate"
    assert result.reasons[0] in result.reason, "the lead names the first of them"


@settings(max_examples=150, deadline=None)
@given(
    model=st.sampled_from(KNOWN),
    system=st.sampled_from(SYSTEMS),
    torch=st.sampled_from([None, *RELEASES]),
    python=st.sampled_from(PYTHONS),
    arch=st.sampled_from(["x86_64", "aarch64"]),
    driver=st.sampled_from(DRIVERS),
    keep=st.booleans(),
)
def test_any_host_gets_a_recommendation_that_holds_or_a_refusal_that_names_real_failures(
    model, system, torch, python, arch, driver, keep
):
    t = host([model], system, arch, python, driver)
    holds(t, SetupRequest(torch=torch, keep_driver=keep and driver is not None))


@pytest.mark.parametrize("version", RELEASES)
def test_every_release_is_answered_for_every_architecture_and_os(version):
    answered = 0
    for model in ONE_PER_CAPABILITY:
        for system in SYSTEMS:
            for arch in ("x86_64", "aarch64"):
                result = holds(host([model], system, arch), SetupRequest(torch=version))
                answered += isinstance(result, Recommendation)
    assert answered, f"torch {version} fits no GPU on any OS"


def test_every_release_fits_an_a100_on_ubuntu_2204():
    for version in RELEASES:
        result = holds(
            host([gpus.find_models("A100")[0]], ("ubuntu", "22.04")), SetupRequest(version)
        )
        assert isinstance(result, Recommendation), (version, getattr(result, "reason", ""))
