"""Every doctor check, in the order a person reads them: the driver stack, CUDA, the hardware,
training, then known errors in the logs.

``run_checks`` is a pure function of the facts, what the doctor read, and the compatibility
table; a check that does not apply to this machine says nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuwizard.core.facts import HostFacts
from gpuwizard.doctor.cuda import check_cuda_versions, check_torch_gpus
from gpuwizard.doctor.driver import (
    check_dev_nodes,
    check_driver,
    check_gpu_support,
    check_next_boot,
    check_nouveau,
    check_persistence,
)
from gpuwizard.doctor.environments import check_torch_envs
from gpuwizard.doctor.findings import Finding
from gpuwizard.doctor.gpu_health import check_clocks, check_fabric_manager
from gpuwizard.doctor.hardware import check_ecc, check_pcie, check_xids
from gpuwizard.doctor.logs import log_findings
from gpuwizard.doctor.observed import Observed
from gpuwizard.doctor.secure_boot import check_secure_boot
from gpuwizard.doctor.training import check_multi_node, check_out_of_memory
from gpuwizard.doctor.wizard_run import check_skipped_steps
from gpuwizard.recommend.table import CompatTable

Check = Callable[[HostFacts, Observed, CompatTable], "Finding | None"]

CHECKS: tuple[Check, ...] = (
    check_skipped_steps,
    check_driver,
    check_gpu_support,
    check_nouveau,
    check_secure_boot,
    check_next_boot,
    check_dev_nodes,
    check_persistence,
    check_fabric_manager,
    check_cuda_versions,
    check_torch_gpus,
    check_pcie,
    check_xids,
    check_ecc,
    check_clocks,
    check_out_of_memory,
    check_multi_node,
)
ENVIRONMENT_CHECKS = (check_torch_envs,)
"""Checks with one finding per thing found (each existing PyTorch environment)."""

NO_GPU = Finding(
    "gpus",
    "unknown",
    "No NVIDIA GPU found",
    "No NVIDIA GPU is on the PCI bus and the driver reports none, so there is nothing to diagnose.",
    "On a cloud server, check that the instance type has a GPU; on your own, that the card is "
    "seated and powered (`lspci -d 10de:` lists NVIDIA devices).",
)

NO_SYSFS = Finding(
    "gpus",
    "unknown",
    "/sys could not be read",
    "No PCI device is visible under /sys/bus/pci (/sys is not mounted here: a chroot or a "
    "locked-down container) and the driver reports no GPU, so whether this machine has an NVIDIA "
    "GPU is unknown and there is nothing to diagnose.",
    "Run the doctor on the machine itself, or where sysfs is mounted (`mount -t sysfs sysfs /sys`; "
    "for a container, on its host).",
)


def run_checks(facts: HostFacts, seen: Observed, table: CompatTable) -> tuple[Finding, ...]:
    found = [finding for check in CHECKS if (finding := check(facts, seen, table)) is not None]
    found += [finding for check in ENVIRONMENT_CHECKS for finding in check(facts, seen, table)]
    if not facts.hardware.gpus:
        found.insert(0, NO_GPU if facts.hardware.pci_visible else NO_SYSFS)
    return (*found, *log_findings(seen.logs))
