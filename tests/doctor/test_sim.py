"""The doctor on simulated hosts driven by the real runner: a clean install is healthy, and the
field's failures (a DKMS build, Secure Boot switched on afterwards, nouveau that stays) show up
as the checks' problems. The support bundle from such a host holds none of its identifying
values."""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuwizard.doctor.bundle import write_bundle
from gpuwizard.doctor.diagnose import Diagnosis, diagnose
from gpuwizard.doctor.findings import Finding
from gpuwizard.runner.layout import EXIT_DONE, EXIT_FAILED, EXIT_REBOOT
from gpuwizard.sim.machine import sandbox_host
from tests.sim.conftest import H100, SimHost

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
Sim = Callable[[str], SimHost]


def doctor(host: SimHost) -> Diagnosis:
    return diagnose(sandbox_host(host.sandbox), host.state_dir)


def finding(result: Diagnosis, check: str) -> Finding:
    return next(f for f in result.report.findings if f.check == check)


def severities(result: Diagnosis) -> dict[str, str]:
    return {f.check: f.severity for f in result.report.findings if f.check != "known-error"}


def test_a_fresh_server_only_waits_for_its_driver_and_a_finished_install_is_healthy(
    sim: Sim,
) -> None:
    host = sim(H100)
    before = doctor(host)
    assert before.report.exit_code == 0
    assert finding(before, "driver").title == "No NVIDIA driver yet"

    host.plan()
    assert host.install() == [EXIT_REBOOT, EXIT_DONE]
    after = doctor(host)

    assert after.report.exit_code == 0, after.report.findings
    # InfiniBand is up but nothing loads nvidia_peermem: the one thing left to tune
    assert {check: s for check, s in severities(after).items() if s != "ok"} == {
        "multi-node": "warn"
    }
    assert finding(after, "multi-node").title == "GPUDirect RDMA off"
    assert set(severities(after)) >= {"driver", "nouveau", "next-boot", "dev-nodes", "persistence",
                                      "cuda-versions", "torch-gpus", "xid", "multi-node"}  # fmt: skip
    cuda = finding(after, "cuda-versions")
    # PyPI's own torch wheel (installed by hash) has no +cuXYZ tag; its CUDA is in torch.version
    assert re.search(
        r"torch \d+\.\d+\.\d+(\+cu\d+)? in /opt/gpuwizard/envs/pytorch \(CUDA 13\.0\)",
        " ".join(cuda.evidence),
    )


def test_a_failed_dkms_build_names_its_make_log(sim: Sim) -> None:
    host = sim(H100)
    host.scenario(dkms_fails=True)
    host.plan()
    assert host.run() == EXIT_FAILED

    result = doctor(host)

    assert result.report.exit_code == 1
    known = finding(result, "known-error")
    assert known.title.startswith(
        "failed step install-nvidia-driver (run-"
    ) and known.title.endswith("dkms-build")
    assert "/var/lib/dkms/nvidia/580.178.04/build/make.log" in known.explanation
    assert "/var/lib/dkms/nvidia/580.178.04/build/make.log" in known.fix


def test_secure_boot_switched_on_after_the_install_rejects_the_dkms_module(sim: Sim) -> None:
    host = sim(H100)
    host.plan()
    assert host.install() == [EXIT_REBOOT, EXIT_DONE]
    host.enable_secure_boot()  # someone turned it on in the firmware; no key was ever enrolled
    host.reboot()

    result = doctor(host)

    assert severities(result)["secure-boot"] == "problem"
    assert severities(result)["driver"] == "problem"
    said = " ".join(finding(result, "secure-boot").evidence)
    assert "Key was rejected by service" in said
    assert "not loaded" in finding(result, "driver").title


def test_nouveau_that_comes_back_after_every_reboot_is_a_problem(sim: Sim) -> None:
    host = sim(H100)
    host.scenario(nouveau_stays=True)
    host.plan()
    assert host.install() == [EXIT_REBOOT, EXIT_REBOOT, EXIT_FAILED]

    result = doctor(host)

    nouveau = finding(result, "nouveau")
    assert nouveau.severity == "problem"
    assert "update-initramfs" in nouveau.fix


CANARIES = {
    "hostname": "canary-node-42",
    "serial": "CNRY7731X",
    "uuid": "d3adb33f-1234-4c0f-9abc-0123456789ab",
    "ipv4": "10.23.45.67",
    "ipv6": "2001:db8:85a3::8a2e:370:7334",
    "mac": "52:54:00:ab:cd:ef",
    "password": "Canary-Pa55word!",
}
LEAKY_OUTPUT = "\n".join([
    f"Err:1 http://mirror.internal/ubuntu jammy InRelease  Could not connect to {CANARIES['ipv4']}:80, via proxy http://svc:{CANARIES['password']}@{CANARIES['ipv4']}:3128",
    f"hostname: {CANARIES['hostname']}  inet6 {CANARIES['ipv6']}/64  link/ether {CANARIES['mac']}",
    f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-{CANARIES['uuid']})  Serial Number: {CANARIES['serial']}",
    f"export MOK_PASSWORD={CANARIES['password']}",
    f"E: Failed to fetch from {CANARIES['ipv4']}",
])  # fmt: skip


def archive_text(path: Path) -> str:
    """Every member's name and content, as one text."""
    parts = []
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            parts.append(member.name)
            handle = archive.extractfile(member)
            parts.append(handle.read().decode("utf-8") if handle else "")
    raw = path.read_bytes()
    return "\n".join(parts) + io.BytesIO(raw).read().decode("latin-1")


def test_a_bundle_from_a_seeded_host_holds_none_of_its_identifying_values(
    sim: Sim, tmp_path: Path
) -> None:
    host = sim(H100)
    host.write("/etc/hostname", f"{CANARIES['hostname']}\n")
    host.write("/proc/sys/kernel/hostname", f"{CANARIES['hostname']}\n")
    host.write("/sys/class/dmi/id/product_serial", f"{CANARIES['serial']}\n")
    host.scenario(
        rules=[
            {"tool": "apt-get", "match": "install", "times": 1, "exit": 100, "output": LEAKY_OUTPUT}
        ]
    )
    host.plan()
    assert host.run() == EXIT_FAILED
    result = doctor(host)
    machine_id, boot_id = result.facts.machine_id, result.facts.boot.boot_id
    assert machine_id and boot_id

    bundle = write_bundle(
        tmp_path / "support.tar.gz", result, sandbox_host(host.sandbox), host.state_dir
    )

    text = archive_text(bundle.path)
    assert any(name.startswith("logs/") for name in bundle.files), "the failed step's log is in it"
    assert "Could not connect to" in text, "the log itself is kept"
    for kind, value in {**CANARIES, "machine-id": machine_id, "boot_id": boot_id}.items():
        assert value.lower() not in text.lower(), f"the {kind} leaked"
    assert "<host-1>" in text and "<secret-1>" in text and "<serial-1>" in text
    with tarfile.open(bundle.path) as archive:
        logs = [
            archive.extractfile(f"gpuwizard-bundle/{n}")
            for n in bundle.files
            if n.startswith("logs/")
        ]
        lines = next(text for h in logs if h and "Could not connect" in (text := h.read().decode()))
    placeholder = re.search(r"Could not connect to (<ip-\d+>)", lines)
    assert placeholder and f"Failed to fetch from {placeholder.group(1)}" in lines, (
        "one value, one placeholder"
    )
