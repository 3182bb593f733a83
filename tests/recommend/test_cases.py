"""Recommendation cases taken from the official tables (sources in recommend/compat.yaml).

Each case is a host described as on the command line, the user's pins, and what must come out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.result import Recommendation, Refusal
from gpuwizard.recommend.target import BadInput, target_from_facts, target_from_spec
from tests.conftest import facts_of


@dataclass(frozen=True)
class Host:
    gpus: tuple[str, ...]
    os: str = "ubuntu:22.04"
    driver: str | None = None
    flavor: str | None = None
    python: str | None = None
    arch: str | None = None
    """None: as on the command line, aarch64 for Grace superchips, else x86_64."""


@dataclass(frozen=True)
class Want:
    """Expected fields; None means "not checked"."""

    status: str = "ok"
    action: str | None = None
    branch: str | None = None
    flavor: str | None = None
    torch: str | None = None
    variant: str | None = None
    python: str | None = None
    refusal: str | None = None
    packages: tuple[str, ...] = ()
    toolkit: str | None = None
    reasons: tuple[str, ...] = field(default=())
    rejected: tuple[tuple[str, str], ...] = ()


def run(table, host: Host, choices: SetupRequest) -> Recommendation | Refusal:
    target = target_from_spec(
        table, host.gpus, host.os, host.arch, host.driver, host.flavor, host.python
    )  # type: ignore[arg-type]
    return recommend(table, target, choices)


CASES = [
    # --- Blackwell: open modules, cu128 or newer
    pytest.param(
        Host(("RTX 5090",), "ubuntu:24.04"),
        SetupRequest(),
        Want(action="install", branch="580", flavor="open", torch="2.14.1", variant="cu130"),
        id="Blackwell needs open modules and a cu128-or-newer wheel",
    ),
    pytest.param(
        Host(("B200",)),
        SetupRequest(),
        Want(branch="580", flavor="open", variant="cu130"),
        id="B200 on 22.04",
    ),
    pytest.param(
        Host(("RTX 5090",)),
        SetupRequest(torch="2.6.0"),
        Want(status="unsupported", refusal="no kernels for GeForce RTX 5090 (sm_120)"),
        id="torch 2.6 has no Blackwell kernels",
    ),
    pytest.param(
        Host(("RTX 5090",)),
        SetupRequest(torch="2.7.1"),
        Want(torch="2.7.1", variant="cu128", flavor="open"),
        id="torch 2.7.1 reaches Blackwell through cu128",
    ),
    pytest.param(
        Host(("RTX 5090",)),
        SetupRequest(torch="2.7"),
        Want(torch="2.7.1", variant="cu128"),
        id="a series pin takes its newest release",
    ),
    pytest.param(
        Host(("RTX 5090",)),
        SetupRequest(variant="cu126"),
        Want(status="unsupported", refusal="cu126 builds of torch 2.14.1 have no kernels"),
        id="cu126 has no Blackwell kernels",
    ),
    pytest.param(
        Host(("B300",)),
        SetupRequest(),
        Want(branch="580", variant="cu130"),
        id="B300 (sm_103) runs sm_100 cubins",
    ),
    pytest.param(
        Host(("RTX 5090",), "ubuntu:20.04"),
        SetupRequest(),
        Want(
            status="ok_after_changes",
            branch="570",
            torch="2.11.0",
            variant="cu128",
            python="install",
        ),
        id="Blackwell on Ubuntu 20.04: its archive's R570 and torch 2.11's cu128 (the last 12.x with sm_120)",
    ),
    pytest.param(
        Host(("B300",), "ubuntu:20.04"),
        SetupRequest(),
        Want(status="unsupported", refusal="no driver that gpuwizard can install on Ubuntu 20.04"),
        id="B300 on Ubuntu 20.04: no driver in its archive is new enough (the real cause)",
    ),
    pytest.param(
        Host(("RTX 5090", "V100")),
        SetupRequest(),
        Want(status="unsupported"),
        id="Blackwell and Volta share no driver flavour or wheel",
    ),
    # --- Volta: proprietary, R580 at most, cu126 from torch 2.11
    pytest.param(
        Host(("V100",)),
        SetupRequest(),
        Want(action="install", branch="580", flavor="proprietary", torch="2.14.1", variant="cu126"),
        id="V100 fresh: R580 proprietary and cu126",
    ),
    pytest.param(
        Host(("V100",)),
        SetupRequest(variant="cu130"),
        Want(status="unsupported", refusal="no kernels for Tesla V100"),
        id="V100 has no kernels in cu13x wheels",
    ),
    pytest.param(
        Host(("V100",)),
        SetupRequest(variant="cu132"),
        Want(status="unsupported", refusal="(sm_70)"),
        id="V100 and cu132",
    ),
    pytest.param(
        Host(("V100",)),
        SetupRequest(torch="2.10.0"),
        Want(variant="cu128", flavor="proprietary"),
        id="V100 with torch 2.10: cu128 still has sm_70",
    ),
    pytest.param(
        Host(("V100",)),
        SetupRequest(torch="2.11.0"),
        Want(variant="cu126"),
        id="V100 with torch 2.11: cu128 dropped sm_70",
    ),
    pytest.param(
        Host(("V100",), driver="535.247.01"),
        SetupRequest(),
        Want(action="keep", branch="535", variant="cu126"),
        id="V100 keeps a working 535 and runs cu126 through minor-version compatibility",
    ),
    pytest.param(
        Host(("V100",), driver="590.48.01"),
        SetupRequest(),
        Want(status="ok_after_changes", action="upgrade", branch="580", flavor="proprietary"),
        id="V100 on R590 must move back to R580",
    ),
    pytest.param(
        Host(("V100",), driver="470.256.02"),
        SetupRequest(keep_driver=True),
        Want(action="keep", torch="2.7.1", variant="cu118"),
        id="a driver that must be kept: 470 caps torch at 2.7.1 cu118",
    ),
    pytest.param(
        Host(("V100", "T4")),
        SetupRequest(),
        Want(flavor="proprietary", variant="cu126"),
        id="mixed V100 + T4 fit proprietary R580 and cu126",
    ),
    # --- old drivers
    pytest.param(
        Host(("T4",), driver="470.256.02"),
        SetupRequest(torch="2.5"),
        Want(action="keep", torch="2.5.1", variant="cu118"),
        id="driver 470 with a request for torch 2.5: cu118 through CUDA 11 compatibility",
    ),
    pytest.param(
        Host(("T4",), driver="470.256.02"),
        SetupRequest(),
        Want(
            status="ok_after_changes",
            action="upgrade",
            branch="580",
            torch="2.14.1",
            variant="cu130",
        ),
        id="driver 470 and latest torch: upgrade the driver",
    ),
    pytest.param(
        Host(("T4",), driver="470.256.02"),
        SetupRequest(torch="2.14.1", keep_driver=True),
        Want(status="unsupported", refusal="needs driver"),
        id="driver 470 kept cannot run torch 2.14",
    ),
    pytest.param(
        Host(("A100",), driver="570.133.20"),
        SetupRequest(),
        Want(action="keep", variant="cu126"),
        id="kept R570 runs cu126 natively",
    ),
    pytest.param(
        Host(("A100",), driver="580.95.05"),
        SetupRequest(),
        Want(action="keep", variant="cu130"),
        id="kept R580 runs the default cu130",
    ),
    pytest.param(
        Host(("H200 NVL",), driver="560.35.03"),
        SetupRequest(),
        Want(status="ok_after_changes", action="upgrade", branch="580"),
        id="H200 NVL needs 565.57.01 or newer",
    ),
    pytest.param(
        Host(("H200 NVL",), driver="560.35.03"),
        SetupRequest(keep_driver=True),
        Want(status="unsupported", refusal="too old for H200 NVL"),
        id="a kept driver too old for the GPU is refused",
    ),
    pytest.param(
        Host(("RTX PRO 6000 Blackwell Server",), driver="575.51.03"),
        SetupRequest(),
        Want(status="ok_after_changes", action="upgrade", branch="580"),
        id="RTX PRO 6000 Server needs 575.57.08",
    ),
    # --- Python
    pytest.param(
        Host(("H100",), python="3.8"),
        SetupRequest(),
        Want(status="ok_after_changes", torch="2.14.1", python="install"),
        id="Python 3.8 with the newest torch: install a newer Python",
    ),
    pytest.param(
        Host(("H100",), python="3.10"),
        SetupRequest(torch="2.15.0"),
        Want(status="ok_after_changes", torch="2.15.0", python="install"),
        id="torch 2.15 needs Python 3.11",
    ),
    pytest.param(
        Host(("H100",), python="3.12"),
        SetupRequest(),
        Want(python="use_system"),
        id="system Python 3.12 fits",
    ),
    pytest.param(
        Host(("L40S",), "rocky:9"),
        SetupRequest(),
        Want(status="ok_after_changes", python="install"),
        id="Rocky 9's Python 3.9 is too old",
    ),
    # --- torch 2.15 (UNCONFIRMED pair) and fresh installs
    pytest.param(
        Host(("H100",)),
        SetupRequest(torch="2.15.0"),
        Want(status="ok_after_changes", branch="595", variant="cu132", python="install"),
        id="torch 2.15's cu132 prefers R595 (13.2 GA) on a fresh install",
    ),
    pytest.param(
        Host(("H100",), driver="580.95.05"),
        SetupRequest(torch="2.15.0"),
        Want(status="ok_after_changes", action="keep", variant="cu132"),
        id="an installed R580 runs cu132 through minor-version compatibility",
    ),
    pytest.param(
        Host(("H100",)),
        SetupRequest(),
        Want(torch="2.14.1", rejected=(("torch 2.15.0", "UNCONFIRMED"),)),
        id="latest means the newest release with a confirmed torchvision pair",
    ),
    # --- OS
    pytest.param(
        Host(("A100",), "ubuntu:20.04"),
        SetupRequest(),
        Want(
            status="ok_after_changes",
            branch="570",
            variant="cu126",
            reasons=("left standard support",),
        ),
        id="Ubuntu 20.04 end of life: its newest archive driver R570 and cu126",
    ),
    pytest.param(
        Host(("A100",), "ubuntu:20.04"),
        SetupRequest(needs_nvcc=True),
        Want(status="ok_after_changes", toolkit="12.6"),
        id="Ubuntu 20.04 toolkit stays on CUDA 12",
    ),
    pytest.param(
        Host(("A100",), "ubuntu:20.04"),
        SetupRequest(needs_nvcc=True, variant="cu130"),
        Want(status="unsupported"),
        id="no CUDA 13 for Ubuntu 20.04",
    ),
    pytest.param(
        Host(("H100",)),
        SetupRequest(needs_nvcc=True),
        Want(toolkit="13.0", packages=("nvidia-driver-580-server-open",)),
        id="nvcc matches the wheel's CUDA",
    ),
    pytest.param(
        Host(("T4",), "debian:12"),
        SetupRequest(),
        Want(branch="580", flavor="open", packages=("nvidia-driver-pinning-580", "nvidia-open")),
        id="Debian 12 uses NVIDIA's repository",
    ),
    pytest.param(
        Host(("T4",), "debian:13"),
        SetupRequest(),
        Want(branch="580", flavor="open"),
        id="Debian 13",
    ),
    pytest.param(
        Host(("L40S",), "rocky:9"),
        SetupRequest(),
        Want(status="ok_after_changes", branch="580", flavor="open", packages=("nvidia-open",)),
        id="Rocky 9 uses dnf",
    ),
    pytest.param(
        Host(("H100",), "ubuntu:24.04"),
        SetupRequest(),
        Want(branch="580", packages=("nvidia-driver-580-server-open", "nvidia-utils-580-server")),
        id="Ubuntu 24.04 server packages with utils",
    ),
    # --- other architectures and PCI ids
    pytest.param(
        Host(("10de:2330",)),
        SetupRequest(),
        Want(branch="580", flavor="open", variant="cu130"),
        id="a PCI id only",
    ),
    pytest.param(
        Host(("2b85",), "ubuntu:24.04"), SetupRequest(), Want(flavor="open"), id="a bare PCI id"
    ),
    pytest.param(
        Host(("A100", "H100")),
        SetupRequest(),
        Want(flavor="open", variant="cu130"),
        id="mixed Ampere and Hopper",
    ),
    pytest.param(
        Host(("GH200 144G",), "ubuntu:24.04", arch="aarch64"),
        SetupRequest(),
        Want(flavor="open", variant="cu130"),
        id="GH200 on aarch64",
    ),
    pytest.param(
        Host(("A100",), arch="aarch64"),
        SetupRequest(torch="2.5.1"),
        Want(status="unsupported", refusal="torch 2.5.1 has no CUDA build for aarch64"),
        id="no aarch64 CUDA builds in the table before torch 2.6",
    ),
    pytest.param(
        Host(("A100",), arch="aarch64"),
        SetupRequest(torch="2.11.0"),
        Want(torch="2.11.0", variant="cu130"),
        id="torch 2.11 is PyPI's first CUDA wheel for aarch64 (cu130)",
    ),
    # --- Grace (aarch64): GH200, GB200, GB10; the architecture follows from the superchip
    pytest.param(
        Host(("GH200 144G",), "ubuntu:24.04"),
        SetupRequest(),
        Want(flavor="open", torch="2.14.1", variant="cu130", python="use_system"),
        id="GH200 without --arch is an aarch64 host",
    ),
    pytest.param(
        Host(("HGX GB200",), "ubuntu:24.04"),
        SetupRequest(),
        Want(branch="580", flavor="open", variant="cu130"),
        id="GB200 (sm_100) on aarch64",
    ),
    pytest.param(
        Host(("GB10",), "ubuntu:24.04"),
        SetupRequest(),
        Want(branch="580", flavor="open", variant="cu130"),
        id="GB10 / DGX Spark (sm_121) runs the sm_120 cubins of cu130",
    ),
    pytest.param(
        Host(("GH200 144G",), "ubuntu:22.04"),
        SetupRequest(torch="2.6.0"),
        Want(torch="2.6.0", variant="cu126"),
        id="GH200 with torch 2.6: its aarch64 cu126 build (sm_90)",
    ),
    pytest.param(
        Host(("HGX GB200",), "ubuntu:24.04"),
        SetupRequest(torch="2.6.0"),
        Want(status="unsupported", refusal="no aarch64 CUDA build of torch 2.6.0 has kernels"),
        id="GB200 with torch 2.6: the aarch64 build has no Blackwell kernels",
    ),
    pytest.param(
        Host(("HGX GB200",), "ubuntu:24.04"),
        SetupRequest(torch="2.7.1"),
        Want(torch="2.7.1", variant="cu128"),
        id="GB200 with torch 2.7.1: aarch64 cu128",
    ),
    pytest.param(
        Host(("GH200 144G",), "ubuntu:24.04"),
        SetupRequest(torch="2.15.0"),
        Want(variant="cu132", branch="595", python="use_system"),
        id="GH200 with torch 2.15: PyPI's aarch64 cu132",
    ),
    # --- the whole release history: .0 and middle patch releases, cu117, sm_37 in cu118
    pytest.param(
        Host(("A100",), "ubuntu:20.04", driver="470.256.02"),
        SetupRequest(torch="1.12.1"),
        Want(action="keep", torch="1.12.1", variant="cu113"),
        id="the guide's recipe: A100, driver 470, torch 1.12.1 (cu113 runs natively on 470)",
    ),
    pytest.param(
        Host(("A100",), "ubuntu:20.04", driver="470.256.02"),
        SetupRequest(torch="1.12.1", variant="cu116"),
        Want(action="keep", torch="1.12.1", variant="cu116"),
        id="the guide's recipe as written: cu116 on 470 through CUDA 11 compatibility",
    ),
    pytest.param(
        Host(("A100",)),
        SetupRequest(torch="1.12.1"),
        Want(torch="1.12.1", variant="cu116", python="use_system"),
        id="torch 1.12.1 on a fresh Ubuntu 22.04: cu116 (newest CUDA, native on R580), its Python 3.10",
    ),
    pytest.param(
        Host(("H100",)),
        SetupRequest(torch="1.13.1"),
        Want(
            status="unsupported",
            refusal="no x86_64 CUDA build of torch 1.13.1 has kernels for H100",
        ),
        id="torch 1.13 never had Hopper kernels",
    ),
    pytest.param(
        Host(("A100",)),
        SetupRequest(torch="2.0.1", variant="cu117"),
        Want(torch="2.0.1", variant="cu117"),
        id="cu117 builds of torch 2.0",
    ),
    pytest.param(
        Host(("Tesla K80",), driver="470.256.02"),
        SetupRequest(torch="2.0.1", variant="cu118", keep_driver=True),
        Want(action="keep", variant="cu118"),
        id="cu118 still ships sm_37 (K80 on its last driver, R470)",
    ),
    pytest.param(
        Host(("A100",)),
        SetupRequest(torch="2.1.1"),
        Want(torch="2.1.1"),
        id="a middle patch release",
    ),
    pytest.param(
        Host(("A100",)), SetupRequest(torch="2.2.0"), Want(torch="2.2.0"), id="a .0 release"
    ),
    pytest.param(
        Host(("A100",), python="3.13"),
        SetupRequest(torch="2.5.1"),
        Want(python="use_system"),
        id="torch 2.5 has Python 3.13 wheels on PyPI",
    ),
    # --- operating systems: Ubuntu 26.04, RHEL/Rocky/Alma 8 and 10, newer unknown releases
    pytest.param(
        Host(("A100",), "ubuntu:26.04"),
        SetupRequest(),
        Want(branch="580", variant="cu130", python="use_system"),
        id="Ubuntu 26.04 (Python 3.14)",
    ),
    pytest.param(
        Host(("H100",), "ubuntu:26.04"),
        SetupRequest(torch="2.15.0"),
        Want(branch="595", variant="cu132", packages=("nvidia-driver-595-server-open",)),
        id="Ubuntu 26.04 with torch 2.15: R595 server packages",
    ),
    pytest.param(
        Host(("L40S",), "rhel:8"),
        SetupRequest(),
        Want(status="ok_after_changes", branch="580", python="install", packages=("nvidia-open",)),
        id="RHEL 8: Python 3.6, dnf module stream",
    ),
    pytest.param(
        Host(("L40S",), "rocky:8"), SetupRequest(), Want(status="ok_after_changes"), id="Rocky 8"
    ),
    pytest.param(
        Host(("L40S",), "almalinux:8"),
        SetupRequest(),
        Want(status="ok_after_changes"),
        id="AlmaLinux 8",
    ),
    pytest.param(
        Host(("L40S",), "rhel:10"),
        SetupRequest(),
        Want(branch="580", python="use_system", reasons=("dnf versionlock *nvidia*580*",)),
        id="RHEL 10: no module streams, the branch is held by dnf versionlock",
    ),
    pytest.param(Host(("L40S",), "rocky:10"), SetupRequest(), Want(branch="580"), id="Rocky 10"),
    pytest.param(
        Host(("L40S",), "almalinux:10"), SetupRequest(), Want(branch="580"), id="AlmaLinux 10"
    ),
    pytest.param(
        Host(("A100",), "ubuntu:26.10"),
        SetupRequest(),
        Want(branch="580"),
        id="Ubuntu 26.10 (newer)",
    ),
    pytest.param(
        Host(("T4",), "debian:14"), SetupRequest(), Want(branch="580"), id="Debian 14 (newer)"
    ),
    pytest.param(
        Host(("T4",), "rocky:11"), SetupRequest(), Want(branch="580"), id="Rocky 11 (newer)"
    ),
    pytest.param(
        Host(("Tesla K80",)),
        SetupRequest(),
        Want(status="unsupported", refusal="R470 is the last branch for Kepler"),
        id="Kepler: no driver gpuwizard installs supports it (the real cause, not the wheel)",
    ),
    pytest.param(
        Host(("GTX 1080",)),
        SetupRequest(),
        Want(flavor="proprietary", variant="cu126"),
        id="Pascal: proprietary and cu126",
    ),
    pytest.param(
        Host(("GTX 1080",)),
        SetupRequest(torch="2.8.0"),
        Want(variant="cu126"),
        id="Pascal is not in cu128 builds",
    ),
    pytest.param(Host(("A10",)), SetupRequest(), Want(variant="cu130"), id="A10 (sm_86)"),
    pytest.param(
        Host(("L4",)), SetupRequest(), Want(variant="cu130"), id="L4 (sm_89) runs sm_86 cubins"
    ),
    pytest.param(
        Host(("H100",)),
        SetupRequest(torch="2.14.1", variant="cu121"),
        Want(status="unsupported", refusal="has no cu121 build"),
        id="a build the release does not have",
    ),
]


@pytest.mark.parametrize(("host", "choices", "want"), CASES)
def test_recommendation(table, host, choices, want):
    result = run(table, host, choices)
    assert result.status == want.status, getattr(result, "reason", result)
    if isinstance(result, Refusal):
        assert want.refusal is None or want.refusal in " ".join((result.reason, *result.reasons))
        assert result.reason
        return
    checks = {
        "action": result.driver.action,
        "branch": result.driver.branch,
        "flavor": result.driver.flavor,
        "torch": result.torch.version,
        "variant": result.torch.variant,
        "python": result.python.action,
        "toolkit": result.cuda_toolkit.version if result.cuda_toolkit else None,
    }
    for key, actual in checks.items():
        expected = getattr(want, key)
        assert expected is None or actual == expected, f"{key}: {actual} != {expected}"
    assert set(want.packages) <= set(result.driver.packages)
    for text in want.reasons:
        assert any(text in r for r in result.reasons), result.reasons
    for option, text in want.rejected:
        assert any(r.option == option and text in r.reason for r in result.rejected), (
            result.rejected
        )


def test_at_least_forty_cases():
    assert len(CASES) >= 40


@pytest.mark.parametrize(
    ("host", "choices", "message"),
    [
        (Host(("H100",)), SetupRequest(torch="1.11.0"), "--torch '1.11.0': unknown release"),
        (Host(("GH200",), arch="x86_64"), SetupRequest(), "--arch x86_64: GH200"),
        (Host(("H100",)), SetupRequest(torch="2.99"), "unknown release"),
        (Host(("H100",)), SetupRequest(torch="two"), "expected a version"),
        (Host(("H100",)), SetupRequest(variant="cu999"), "no PyTorch release has that build"),
        (Host(("Voodoo 5",)), SetupRequest(), "--gpu 'Voodoo 5': no NVIDIA GPU matches"),
        (
            Host(("H100",), "ubuntu:18.04"),
            SetupRequest(),
            "--os 'ubuntu:18.04': unknown OS; accepted: ubuntu:20.04",
        ),
        (Host(("H100",), "ubuntu"), SetupRequest(), "unknown OS"),
        (
            Host(("H100",), driver="latest"),
            SetupRequest(),
            "--driver 'latest': expected a driver version",
        ),
        (Host(("H100",), python="3"), SetupRequest(), "--python '3'"),
        (Host(("H100",), flavor="open"), SetupRequest(), "--driver-flavor needs --driver"),
    ],
)
def test_bad_input_names_the_value_and_what_is_accepted(table, host, choices, message):
    with pytest.raises(BadInput) as error:
        run(table, host, choices)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("profile", "status", "action", "detail"),
    [
        (
            "a100x4-ubuntu2004-fresh",
            "ok_after_changes",
            "install",
            "apply the pending kernel update",
        ),
        ("h100x8-ubuntu2204-fresh", "ok", "install", "nvidia-fabricmanager-580"),
        ("h200-ubuntu2404-driver570", "ok", "keep", "cu126"),
        ("v100x4-ubuntu2204-driver535", "ok", "keep", "cu126"),
        ("t4-debian12-fresh", "ok", "install", "nvidia-open"),
        ("l40sx4-rocky9-fresh", "ok_after_changes", "install", "nvidia-driver:580-open"),
        (
            "rtx5090-ubuntu2404-secureboot",
            "ok",
            "install",
            "linux-modules-nvidia-580-server-open-6.14.0-29-generic",
        ),
        ("wsl2-ubuntu2204-rtx4090", "ok", "keep", "managed by Windows"),
        ("nogpu-ubuntu2204", "unsupported", None, "no NVIDIA GPU"),
    ],
)
def test_recorded_hosts(table, profile, status, action, detail):
    result = recommend(table, target_from_facts(facts_of(profile), table))
    assert result.status == status
    if isinstance(result, Refusal):
        assert detail in result.reason
        return
    assert result.driver.action == action
    text = " ".join(
        (
            *result.driver.packages,
            *result.changes,
            *result.reasons,
            result.torch.variant,
            result.driver.module_stream or "",
        )
    )
    assert detail in text
