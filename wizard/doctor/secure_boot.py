"""The Secure Boot check: will the firmware let the nvidia module load?

With Secure Boot on, a module loads only when its signer's key is trusted: the kernel's own key
(Canonical-signed prebuilt modules) or a Machine Owner Key enrolled at the console. DKMS signs
with its own key, which must be enrolled first, or modprobe says "Key was rejected by service"
(reliability.md §3.5). Pure.
"""

from __future__ import annotations

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.hints import find
from gpuwizard.doctor.driver import applies, driver_installed, next_kernel
from gpuwizard.doctor.findings import Finding
from gpuwizard.doctor.observed import Observed
from gpuwizard.recommend.table import CompatTable

SOURCE = "reliability.md §3.5; acidanthera/bugtracker#2237, subiquity#1969"
ENROLL = (
    "Enroll the key: sudo mokutil --import /var/lib/dkms/mok.pub (choose a one-time password), "
    "reboot, and at the blue MokManager screen choose Enroll MOK and type that password; or "
    "install Canonical-signed modules (linux-modules-nvidia-<branch>-server-<kernel>), or turn "
    "Secure Boot off in the firmware."
)


def _signed_by_dkms(signer: str | None) -> bool:
    return signer is None or "dkms" in signer.lower() or "mok" in signer.lower()


def _mok_finding(facts: HostFacts, evidence: tuple[str, ...]) -> Finding:
    mok = facts.installs.mok
    if mok == "enrolled":
        return Finding(
            "secure-boot", "ok", "Secure Boot on, module key enrolled",
            "The key that signs the nvidia module is enrolled, so the module will load.",
            evidence=evidence, source=SOURCE,
        )  # fmt: skip
    if mok == "pending":
        return Finding(
            "secure-boot", "warn", "Secure Boot on, key waiting for the console",
            "The module's signing key is queued for enrollment: someone must confirm it at the "
            "MokManager screen during the next boot, or the module will be refused.",
            "Reboot with a console (IPMI/BMC or a monitor) and choose Enroll MOK.",
            evidence, SOURCE,
        )  # fmt: skip
    return Finding(
        "secure-boot",
        "problem",
        "Secure Boot will refuse the module",
        "Secure Boot is on and the nvidia module is signed with a key the firmware does not "
        'trust (the MOK is not enrolled): modprobe says "Key was rejected by service".',
        ENROLL,
        evidence,
        SOURCE,
    )


def check_secure_boot(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    del table
    if not applies(facts):
        return None
    state = facts.boot.secure_boot
    if state in ("disabled", "unsupported"):
        return Finding(
            "secure-boot", "ok", f"Secure Boot {state}",
            "The kernel loads unsigned modules, so DKMS-built drivers load without a key.",
            source=SOURCE,
        )  # fmt: skip
    if state == "unknown":
        return Finding(
            "secure-boot", "unknown", "Secure Boot not checked",
            "Neither mokutil nor the EFI variable said whether Secure Boot is on.",
            "Run `sudo gpuwizard doctor`, or `mokutil --sb-state`.",
        )  # fmt: skip
    signer = seen.module_signer
    kernel = next_kernel(facts) or facts.boot.kernel
    evidence: tuple[str, ...] = ("Secure Boot enabled", f"MOK: {facts.installs.mok}")
    if signer is not None:
        evidence += (f"nvidia module for {kernel} signed by: {signer or 'nobody (unsigned)'}",)
    log = seen.kernel_log.text if seen.kernel_log else ""
    if hit := find(log, "key-rejected"):
        return _mok_finding(facts, (*evidence, hit.line))
    if facts.boot.nvidia_loaded:
        return Finding(
            "secure-boot", "ok", "Secure Boot on, module accepted",
            "Secure Boot is on and it accepted the nvidia module.", evidence=evidence, source=SOURCE,
        )  # fmt: skip
    if not driver_installed(facts) or facts.installs.has_package("linux-modules-nvidia-"):
        return Finding(
            "secure-boot", "ok", "Secure Boot on",
            "gpuwizard installs Canonical-signed modules (or enrolls a key) where Secure Boot is on.",
            evidence=evidence, source=SOURCE,
        )  # fmt: skip
    if signer == "":
        return Finding(
            "secure-boot", "problem", "Unsigned module under Secure Boot",
            f"The nvidia module for {kernel} is not signed at all, so Secure Boot will refuse it.",
            ENROLL, evidence, SOURCE,
        )  # fmt: skip
    if _signed_by_dkms(signer):
        return _mok_finding(facts, evidence)
    return Finding(
        "secure-boot", "ok", "Secure Boot on, module signed",
        f"The nvidia module is signed by {signer}, a key the kernel trusts.",
        evidence=evidence, source=SOURCE,
    )  # fmt: skip
