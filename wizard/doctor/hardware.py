"""Checks of the GPUs as hardware: PCIe links, Xid errors in the kernel log, ECC memory health.

PCIe: a link trained narrower than both ends support (x8 of x16) is a seating or riser problem;
a slower speed alone may be the GPU saving power at idle, so it only warns. Xids are the driver's
own fault reports. ECC and row remapping come from NVML. Pure.
"""

from __future__ import annotations

from gpuwizard.core.facts import Gpu, HostFacts, NvmlGpu, NvmlOk
from gpuwizard.core.machine_words import counted
from gpuwizard.doctor.driver import gpus_here, on_the_host
from gpuwizard.doctor.findings import Finding, Severity
from gpuwizard.doctor.observed import Observed
from gpuwizard.doctor.xids import XID_SOURCE, parse_xids, worst_first
from gpuwizard.recommend.table import CompatTable

NVML_SOURCE = "NVML (nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT)"


def _gts(speed: str | None) -> float:
    try:
        return float((speed or "").split()[0])
    except (ValueError, IndexError):
        return 0.0


def _link_state(gpu: Gpu, nvml: NvmlGpu | None) -> tuple[bool, bool, str] | None:
    """(narrower, slower, description) of one GPU's link; None when nothing is known."""
    link = gpu.pci.link
    if link is None and nvml is None:
        return None
    narrower = slower = False
    parts = []
    if link is not None:
        narrower = bool(
            link.width_current and link.width_max and link.width_current < link.width_max
        )
        slower = bool(
            link.speed_current
            and link.speed_max
            and _gts(link.speed_current) < _gts(link.speed_max)
        )
        parts.append(
            f"x{link.width_current} of x{link.width_max}, {link.speed_current} of {link.speed_max}"
        )
    if nvml is not None and nvml.pcie_width_current and nvml.pcie_width_max:
        narrower = narrower or nvml.pcie_width_current < nvml.pcie_width_max
        slower = slower or bool(
            nvml.pcie_gen_current
            and nvml.pcie_gen_max
            and nvml.pcie_gen_current < nvml.pcie_gen_max
        )
        parts.append(
            f"NVML: gen {nvml.pcie_gen_current} of {nvml.pcie_gen_max}, "
            f"x{nvml.pcie_width_current} of x{nvml.pcie_width_max}"
        )
    return narrower, slower, f"{gpu.pci.address}: {'; '.join(parts)}"


def link_words(gpu: Gpu, nvml: NvmlGpu | None) -> str | None:
    """ "Gen5 x16 of Gen5 x16" (NVML), else "x16 32.0 GT/s of x16 32.0 GT/s" (sysfs)."""
    if nvml is not None and nvml.pcie_gen_current and nvml.pcie_width_current:
        return (
            f"Gen{nvml.pcie_gen_current} x{nvml.pcie_width_current} of "
            f"Gen{nvml.pcie_gen_max} x{nvml.pcie_width_max}"
        )
    link = gpu.pci.link
    if link is None or not link.width_current:
        return None
    return f"x{link.width_current} {link.speed_current} of x{link.width_max} {link.speed_max}"


def _full_links(facts: HostFacts, by_bus: dict[str, NvmlGpu], count: int) -> str:
    """The ok title: the link all GPUs trained at, with the numbers."""
    words = {w for g in facts.hardware.gpus if (w := link_words(g, by_bus.get(g.pci.address)))}
    said = words.pop() if len(words) == 1 else "full width and speed"
    return f"PCIe links at {said} ({counted(count, 'GPU')})"


def check_pcie(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    del seen, table
    if not gpus_here(facts):
        return None
    nvml = facts.boot.nvml
    by_bus = {g.pci_bus_id: g for g in nvml.gpus} if isinstance(nvml, NvmlOk) else {}
    states = [s for g in facts.hardware.gpus if (s := _link_state(g, by_bus.get(g.pci.address)))]
    if not states:
        return None
    narrow = [text for narrower, _, text in states if narrower]
    slow = [text for narrower, slower, text in states if slower and not narrower]
    if narrow:
        return Finding(
            "pcie", "problem", f"PCIe link narrower than it can be on {counted(len(narrow), 'GPU')}",
            "A link trained with fewer lanes than both ends support moves data to and from the "
            "GPU at a fraction of its speed.",
            on_the_host(facts, "Power off, reseat the card (and its riser or cable), and check the "
                        "slot's lane sharing in the board manual; `sudo lspci -vv` shows LnkSta "
                        "against LnkCap."),
            tuple(narrow), "the guide's hardware section; PCI Express link training",
        )  # fmt: skip
    if slow:
        return Finding(
            "pcie", "warn", f"PCIe link slower than its maximum on {counted(len(slow), 'GPU')}",
            "The link runs below its top speed; GPUs lower it at idle to save power, so this "
            "matters only if it stays low under load.",
            "Check while training: nvidia-smi -q -d PCI (Link Gen Current); if it stays low, "
            "reseat the card and check the BIOS PCIe speed setting.",
            tuple(slow), "the guide's hardware section",
        )  # fmt: skip
    return Finding(
        "pcie", "ok", _full_links(facts, by_bus, len(states)),
        "Every GPU's link trained at what both ends support.",
        evidence=tuple(text for _, _, text in states[:4]),
        source="PCI sysfs (current/max_link_speed, _width); NVML (nvidia-smi -q -d PCI)",
    )  # fmt: skip


def check_xids(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    del table
    if not gpus_here(facts):
        return None
    if seen.kernel_log is None:
        why = seen.why_unread("kernel log") or "kernel log: not read"
        return Finding(
            "xid", "unknown", "Xid errors not checked: kernel log not readable",
            f"The kernel log could not be read ({why.removeprefix('kernel log: ')}).",
            "Run `sudo gpuwizard doctor` (reading the kernel log needs root or the adm group).",
            (why,), XID_SOURCE,
        )  # fmt: skip
    groups = worst_first(parse_xids(seen.kernel_log.text))
    if not groups:
        return Finding(
            "xid", "ok", f"No Xid errors ({seen.kernel_log.source}, this boot)",
            f"The driver reported no GPU faults in this boot's kernel log ({seen.kernel_log.source}).",
            source=XID_SOURCE,
        )  # fmt: skip
    code, pci, first = groups[0]
    meaning = first[0].meaning
    severity: Severity = "warn"
    if any(f[0].meaning.level == "problem" for _, _, f in groups):
        severity = "problem"
    others = [f"Xid {c} ({f[0].meaning.meaning}) on {p}" for c, p, f in groups[1:]]
    also = f" Also: {'; '.join(others)}." if others else ""
    evidence = tuple(line for _, _, found in groups for line in (x.line for x in found[:2]))[:6]
    return Finding(
        "xid",
        severity,
        f"Xid {code} on {pci}: {meaning.meaning}",
        f"The driver reported Xid {code} ({meaning.meaning}) {counted(len(first), 'time')} on {pci}.{also}",
        meaning.fix,
        evidence,
        XID_SOURCE,
    )


def _memory_trouble(gpu: NvmlGpu) -> tuple[Severity, str, str] | None:
    """(severity, what, fix) for the worst memory-health fact of one GPU."""
    reset = f"drain GPU {gpu.index}, then reset it (sudo nvidia-smi -r -i {gpu.index}) or reboot"
    if gpu.remap_failed:
        return (
            "problem",
            f"GPU {gpu.index}: a row remapping failed",
            "The memory can no longer repair itself: the GPU needs service (RMA).",
        )
    if gpu.remap_pending:
        return (
            "problem",
            f"GPU {gpu.index}: a row remap waits for a reset",
            f"{reset[0].upper()}{reset[1:]} to apply it.",
        )
    if gpu.retired_pages_pending:
        return (
            "problem",
            f"GPU {gpu.index}: retired pages wait for a reset",
            f"{reset[0].upper()}{reset[1:]} to apply them.",
        )
    if gpu.ecc_uncorrected_volatile:
        return (
            "problem",
            f"GPU {gpu.index}: {counted(gpu.ecc_uncorrected_volatile, 'uncorrectable ECC error')} since the last reset",
            f"{reset[0].upper()}{reset[1:]}; if they return, plan service.",
        )
    if gpu.ecc_uncorrected_aggregate:
        return (
            "warn",
            f"GPU {gpu.index}: {counted(gpu.ecc_uncorrected_aggregate, 'uncorrectable ECC error')} in its lifetime",
            "Watch it (nvidia-smi -q -d ECC); plan service if the count grows.",
        )
    if gpu.ecc_enabled is False:
        return (
            "warn",
            f"GPU {gpu.index}: ECC is off",
            f"Memory errors go unnoticed: sudo nvidia-smi -e 1 -i {gpu.index}, then reboot.",
        )
    return None


def _repairs(gpu: NvmlGpu) -> str:
    """Row remapping (Ampere and newer) or page retirement (before), as NVML counts them."""
    if gpu.remap_pending is not None:
        return (
            f"rows remapped {gpu.remapped_rows_correctable} correctable / "
            f"{gpu.remapped_rows_uncorrectable} uncorrectable, pending "
            f"{'yes' if gpu.remap_pending else 'no'}, failed {'yes' if gpu.remap_failed else 'no'}"
        )
    if gpu.retired_pages_pending is not None:
        return (
            f"pages retired {gpu.retired_pages_sbe} single-bit / {gpu.retired_pages_dbe} "
            f"double-bit, pending {'yes' if gpu.retired_pages_pending else 'no'}"
        )
    return "no repair counters"


def _memory_counters(gpu: NvmlGpu) -> str:
    return (
        f"GPU {gpu.index} ({gpu.pci_bus_id}): ECC {'on' if gpu.ecc_enabled else 'off'}, "
        f"uncorrectable {gpu.ecc_uncorrected_volatile} volatile (since the last reset) / "
        f"{gpu.ecc_uncorrected_aggregate} aggregate (lifetime); {_repairs(gpu)}"
    )


def _healthy_title(gpus: list[NvmlGpu]) -> str:
    """The ok line with its numbers, summed over the GPUs."""
    on = sum(1 for g in gpus if g.ecc_enabled)
    volatile = sum(g.ecc_uncorrected_volatile or 0 for g in gpus)
    aggregate = sum(g.ecc_uncorrected_aggregate or 0 for g in gpus)
    if any(g.remap_pending is not None for g in gpus):
        repairs = (
            f"{sum(g.remapped_rows_uncorrectable or 0 for g in gpus)} rows remapped, none pending"
        )
    elif any(g.retired_pages_pending is not None for g in gpus):
        repairs = "no page retirement pending"
    else:
        repairs = "no repair counters"
    return (
        f"ECC on ({on} of {counted(len(gpus), 'GPU')}): {volatile} uncorrectable volatile, "
        f"{aggregate} aggregate; {repairs}"
    )


def check_ecc(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    del seen, table
    nvml = facts.boot.nvml
    if not gpus_here(facts) or not isinstance(nvml, NvmlOk):
        return None
    reporting = [g for g in nvml.gpus if g.ecc_enabled is not None or g.remap_pending is not None]
    if not reporting:
        return None  # GeForce cards and some drivers report no memory health at all
    troubles = [t for g in reporting if (t := _memory_trouble(g))]
    if not troubles:
        remapped = sum(g.remapped_rows_correctable or 0 for g in reporting)
        note = f"; {counted(remapped, 'row')} remapped after correctable errors" if remapped else ""
        return Finding(
            "ecc", "ok", _healthy_title(reporting),
            f"No uncorrectable ECC errors and no pending repairs on {counted(len(reporting), 'GPU')}{note}.",
            evidence=tuple(_memory_counters(g) for g in reporting[:4]), source=NVML_SOURCE,
        )  # fmt: skip
    worst = sorted(troubles, key=lambda t: t[0] != "problem")
    severity, what, fix = worst[0]
    return Finding(
        "ecc",
        severity,
        what,
        f"NVML reports trouble in the GPU memory: {'; '.join(t[1] for t in worst)}.",
        on_the_host(facts, fix),
        tuple(_memory_counters(g) for g in reporting if _memory_trouble(g)),
        NVML_SOURCE,
    )
