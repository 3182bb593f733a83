"""wait-cloud-init: let cloud-init finish before touching apt.

On a fresh cloud server cloud-init may still be installing packages, holding the dpkg lock and
racing unattended-upgrades (cloud-init#2908). ``cloud-init status --wait`` returns when it is
done: 0 done, 2 done with recoverable errors (shown as a warning), 1 failed.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import Command
from gpuwizard.core.plan import Action, Target
from gpuwizard.steps.base import Check

FINISHED = ("done", "degraded", "disabled", "absent")


@dataclass(frozen=True)
class WaitCloudInit:
    id: str = "wait-cloud-init"
    title: str = "Wait for cloud-init to finish"
    why: str = (
        "cloud-init may still be installing packages on a new instance; apt would fight it for "
        "the dpkg lock. Waiting costs seconds; racing it can leave dpkg half-configured."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        state = facts.boot.cloud_init
        if state == "degraded":  # finished, with errors worth a look but no reason to stop (T07)
            return Check(
                True,
                "warning: cloud-init finished with recoverable errors (degraded); continuing. "
                "See `cloud-init status --long`",
            )
        if state == "error":
            return Check(
                False,
                "cloud-init failed (status: error); see `cloud-init status --long` and "
                "/var/log/cloud-init.log, fix it, then run gpuwizard again",
            )
        return Check(state in FINISHED, f"cloud-init is {state}")

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        return (
            Command(
                ("cloud-init", "status", "--wait"),
                ok_codes=(0, 2),
                timeout_s=1800,
                silence_timeout_s=1800,
            ),
        )

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
