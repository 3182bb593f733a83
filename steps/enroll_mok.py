"""enroll-mok: Secure Boot with a DKMS-built driver needs a Machine Owner Key, enrolled at the
console on the next boot.

With Secure Boot on, the kernel only loads signed modules. DKMS signs nvidia.ko with a local
key; the firmware must be told to trust it through MokManager, which appears on the console at
the next boot and asks for the one-time password chosen here. Over SSH alone this cannot be
finished: someone needs the console or the BMC's remote console (azure-docs#111536).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import Command
from gpuwizard.core.paths import MOK_PUBLIC_KEY
from gpuwizard.core.plan import Action, SecretRef, Target
from gpuwizard.steps.base import Check

MOK_PASSWORD_MIN, MOK_PASSWORD_MAX = 1, 256
"""``mokutil --import`` asks for 1 to 256 characters (PASSWORD_MIN/PASSWORD_MAX in src/mokutil.c,
lcp/mokutil 9ae73db, 2025-07-03); 8-16 is the rule of ``mokutil --password`` (SB_PASSWORD_*)."""
MOK_PASSWORD_RULES = (
    f"{MOK_PASSWORD_MIN}-{MOK_PASSWORD_MAX} characters (mokutil's limits), printable ASCII only "
    "(MokManager keeps only the low byte of each key typed at the console)"
)
"""Printable ASCII: shim's MokManager.c (rhboot/shim 72fd4b7, 2026-07-27) turns each typed
CHAR16 into a char (``pw_ascii[i] = (char)password[i]``) before hashing, so a non-ASCII password
set with mokutil (UTF-8 bytes) can never be matched at the console."""
MOK_PASSWORD = SecretRef(
    "mok-password",
    "One-time MOK password: you type it again at the blue MokManager screen on the next boot",
)
MOK_CONSOLE = (
    "At the next boot, before Linux starts, MokManager shows a blue screen on the console: choose "
    "'Enroll MOK', 'Continue', 'Yes', type this password, then 'Reboot'. It waits 10 seconds for "
    "a key, then boots on without enrolling. Over SSH nobody sees it: you need the machine's "
    "console, its BMC's remote console (iDRAC, iLO, IPMI serial-over-LAN), or a cloud's serial "
    "console: AWS EC2 Serial Console, Azure Serial Console, Google Cloud's interactive serial "
    "console (each to be enabled first)."
)
"""Sources: the 10 s countdown is MokManager.c's default timeout (rhboot/shim 72fd4b7); the
three clouds document a serial console that works before the OS is up (AWS: "Configure access
to the EC2 Serial Console", "even if there are boot failures"; Azure: "Azure Serial Console",
"independent of the network or operating system state"; Google Cloud: "Troubleshooting using
the serial console", "BIOS and other system-level entities ... can accept input"), read
2026-12-03. That MokManager itself draws on those serial ports depends on the firmware's
console redirection: UNCONFIRMED here (no such machine reachable)."""


def mok_password_problem(value: str) -> str | None:
    """Why ``value`` cannot be the MOK password (mokutil's length rule, and ours: printable
    ASCII), or None when it can. Never repeats the value."""
    size = len(value.encode("utf-8"))
    if size < MOK_PASSWORD_MIN:
        return "the MOK password is empty; mokutil needs at least one character"
    if size > MOK_PASSWORD_MAX:
        return f"the MOK password is longer than mokutil's {MOK_PASSWORD_MAX} characters"
    if not all(" " <= ch <= "~" for ch in value):
        return (
            "the MOK password must be printable ASCII (letters, digits, punctuation, space): "
            "MokManager keeps only the low byte of each key typed at the console"
        )
    return None


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
