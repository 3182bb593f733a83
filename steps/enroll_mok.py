"""enroll-mok: Secure Boot with a DKMS-built driver needs a Machine Owner Key, enrolled at the
console on the next boot.

With Secure Boot on, the kernel only loads signed modules. DKMS signs nvidia.ko with a local
key; the firmware must be told to trust it through MokManager, which appears on the console at
the next boot and asks for the one-time password chosen here. Over SSH alone this cannot be
finished: someone needs the console or the BMC's remote console (azure-docs#111536).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.facts import HostFacts
from gpuwizard.ops import Command
from gpuwizard.paths import MOK_PUBLIC_KEY
from gpuwizard.plan import Action, SecretRef, Target
from gpuwizard.steps.base import Check

MOK_PASSWORD = SecretRef(
    "mok-password",
    "One-time MOK password (8-16 characters): you type it again at the blue MokManager screen on the next boot",
)


@dataclass(frozen=True)
class EnrollMok:
    id: str = "enroll-mok"
    title: str = "Prepare Secure Boot key enrollment (MOK)"
    why: str = (
        "Secure Boot is on and the driver module is built here, so it must be signed with a key "
        "the firmware trusts. This creates the key and queues it; at the next boot the console "
        "shows MokManager: choose 'Enroll MOK' and type the password chosen now. Without console "
        "or BMC access, stop here and choose signed prebuilt modules or disable Secure Boot."
    )
    needs_reboot: bool = True
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        if facts.boot.secure_boot != "enabled":
            return Check(True, f"Secure Boot is {facts.boot.secure_boot}")
        state = facts.installs.mok
        return Check(state == "enrolled", f"MOK key: {state}")

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        answers: dict[str, str | SecretRef] = {
            r"input password:": MOK_PASSWORD,
            r"input password again:": MOK_PASSWORD,
        }
        importing = Command(
            ("mokutil", "--import", MOK_PUBLIC_KEY),
            answers=answers,
            timeout_s=600,
            silence_timeout_s=600,
        )
        if facts.installs.mok == "no-key":
            return (Command(("dkms", "generate_mok"), timeout_s=300), importing)
        return () if facts.installs.mok == "pending" else (importing,)

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
