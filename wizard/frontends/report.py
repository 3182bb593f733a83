"""Plain-text reports for the command line: the host at a glance, and a recommendation.

Pure formatting: facts, findings and results in, lines of text out. The CLI prints them; the TUI
has its own screens.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from gpuwizard.core.facts import HostFacts, NvmlOk, no_gpu_in_words
from gpuwizard.core.machine_words import (
    disk_words,
    fabric_words,
    nic_words,
    platform_words,
    torch_env_lines,
)
from gpuwizard.recommend.sizing import Finding

if TYPE_CHECKING:
    from gpuwizard.recommend.result import Recommendation, Refusal
    from gpuwizard.recommend.table import CompatTable

_MARK = {"ok": "ok ", "info": "-- ", "warning": "!! ", "error": "XX "}


def host_lines(facts: HostFacts, findings: tuple[Finding, ...]) -> list[str]:
    os = facts.os.pretty_name if facts.os else "unknown OS"
    lines = [f"Host     {os}, kernel {facts.boot.kernel}, {facts.platform.arch}"]
    counts = Counter((g.model.name, g.model.arch, g.model.sm) for g in facts.hardware.gpus)
    for (name, arch, sm), n in counts.items():
        lines.append(f"GPU      {n}x {name} ({arch}, {sm or 'unknown sm'})")
    if not counts:
        lines.append(f"GPU      {no_gpu_in_words(facts.hardware)}")
    if facts.hardware.nvswitches or facts.hardware.infiniband:
        lines.append(f"Fabric   {fabric_words(facts.hardware)}")
    if platform := platform_words(facts.platform):
        lines.append(f"Runs in  {platform}")
    nvml = facts.boot.nvml
    driver = (
        f"{nvml.driver_version} (CUDA {nvml.cuda_driver_version})"
        if isinstance(nvml, NvmlOk)
        else nvml.reason
    )
    lines.append(f"Driver   {driver}")
    boot = facts.boot
    nouveau = "loaded" if boot.nouveau_loaded else "not loaded"
    lines.append(
        f"Boot     Secure Boot {boot.secure_boot}, nouveau {nouveau}, cloud-init {boot.cloud_init}"
    )
    disks = ", ".join(disk_words(d) for d in facts.hardware.disks) or "none found"
    lines.append(f"Disks    {disks}")
    lines.append(f"Network  {', '.join(nic_words(n) for n in facts.hardware.nics) or 'none found'}")
    python = facts.python.system_python or "none"
    lines.append(
        f"Python   system {python}"
        + (f", conda at {facts.python.conda}" if facts.python.conda else "")
    )
    lines += [f"PyTorch  {line}" for line in torch_env_lines(facts)]
    lines.append("")
    lines += [f"{_MARK[f.severity]} {f.title}: {f.reason}" for f in findings]
    return lines


def recommendation_lines(result: Recommendation | Refusal) -> list[str]:
    if result.status == "unsupported":
        assert not hasattr(result, "driver")
        lines = [f"Unsupported: {result.reason}"]
        lines += [f"  - {r}" for r in result.reasons if r]
        return lines
    d, t, p = result.driver, result.torch, result.python
    flavor = f" {d.flavor}" if d.flavor else ""
    lines = [
        f"Status   {result.status}",
        f"Driver   {d.action} R{d.branch}{flavor} ({d.version}; needs >= {d.min_version})",
    ]
    if d.packages:
        lines.append(f"         packages: {' '.join(d.packages)}")
    audio = f", torchaudio {t.torchaudio}" if t.torchaudio else ""
    lines.append(
        f"PyTorch  torch {t.version} ({t.variant}), torchvision {t.torchvision or 'UNCONFIRMED'}{audio}"
    )
    lines.append(f"         {t.index_url}")
    lines.append(f"Python   {p.version} ({'system' if p.action == 'use_system' else 'to install'})")
    if result.cuda_toolkit:
        lines.append(
            f"CUDA     toolkit {result.cuda_toolkit.version}: {' '.join(result.cuda_toolkit.packages)}"
        )
    if result.changes:
        lines += ["", "Changes first:"] + [f"  - {c}" for c in result.changes]
    lines += ["", "Why:"] + [f"  - {r}" for r in result.reasons]
    if result.unconfirmed:
        lines += ["", "UNCONFIRMED (checked after install):"] + [
            f"  - {u}" for u in result.unconfirmed
        ]
    if result.rejected:
        lines += ["", "Not chosen:"] + [f"  - {r.option}: {r.reason}" for r in result.rejected]
    return lines


def existing_lines(facts: HostFacts, table: CompatTable, chosen: str | None) -> list[str]:
    """The PyTorch already on the machine, after a recommendation: each found, whether it fits,
    and how to use it as it is (--use-env: nothing downloaded); or the one chosen."""
    from gpuwizard.recommend.existing import ranked
    from gpuwizard.steps import COSTS

    fits = ranked(facts, table)
    saved = COSTS["install-torch"].download_mib / 1024
    if not fits:
        return []
    lines = ["", "PyTorch already here:"]
    for fit in fits:
        lines.append(f"  {fit.env.words()}: {fit.summary}")
        if fit.env.path == chosen:
            lines.append(
                "    chosen (--use-env): used as it is; nothing is downloaded or installed in it"
            )
        elif fit.usable:
            lines.append(
                f"    to use it as it is: --use-env {fit.env.path} (nothing downloaded; the "
                f"recommended PyTorch in a new environment is about {saved:.1f} GiB)"
            )
    return lines
