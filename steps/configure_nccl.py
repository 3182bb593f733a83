"""configure-nccl: NCCL settings for multi-node training, in /etc/nccl.conf.

NCCL reads /etc/nccl.conf for every job. The settings name the fastest network: InfiniBand HCAs
when present (NCCL_IB_HCA), else the fastest Ethernet interface (NCCL_SOCKET_IFNAME), so traffic
does not wander onto a 1 Gb/s management port. NCCL_DEBUG=WARN keeps problems visible; set it
to INFO in a job when debugging, as the guide advises.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.paths import NCCL_CONF
from gpuwizard.core.plan import Action, Target, WriteFile
from gpuwizard.steps.base import Check


def nccl_conf(facts: HostFacts) -> str:
    lines = [
        "# Written by gpuwizard for multi-node training; see the NCCL environment variables docs.",
        "NCCL_DEBUG=WARN",
    ]
    nics = facts.hardware.nics
    if facts.hardware.infiniband:
        lines.append("NCCL_IB_HCA=mlx5")
    ethernet = sorted(
        (n for n in nics if n.kind == "ethernet" and n.speed_mbps),
        key=lambda n: -(n.speed_mbps or 0),
    )
    if ethernet:
        lines.append(f"NCCL_SOCKET_IFNAME={ethernet[0].name}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ConfigureNccl:
    id: str = "configure-nccl"
    title: str = "Configure NCCL for multi-node training"
    why: str = (
        "Points NCCL at the fastest network (InfiniBand, or the fastest Ethernet port) for every "
        "job, so collective traffic does not fall back to a slow management interface."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST, Target.IMAGE)

    def check(self, facts: HostFacts) -> Check:
        same = facts.installs.managed_files.get(NCCL_CONF) == nccl_conf(facts)
        return Check(same, f"{NCCL_CONF} is set" if same else f"{NCCL_CONF} is missing or differs")

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        return () if self.check(facts).satisfied else (WriteFile(NCCL_CONF, nccl_conf(facts)),)

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
