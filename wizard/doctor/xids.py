"""Xid errors: the NVIDIA driver's numbered reports of GPU faults in the kernel log.

``parse_xids`` pulls them out of dmesg / journalctl -k text; ``XIDS`` says, for the ones seen on
training servers, what each means, how serious it is and what to do. The meanings follow
NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

XID_SOURCE = "NVIDIA Xid catalogue (docs.nvidia.com/deploy/xid-errors)"
_XID_LINE = re.compile(
    r"NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>[0-9]+),?(?P<rest>[^\n]*)"
)


@dataclass(frozen=True)
class XidMeaning:
    meaning: str
    level: Literal["warn", "problem"]
    """warn: usually the program's fault or already recovered; problem: the GPU or its link."""
    fix: str


_APP = "Usually a bug in the program that ran (an out-of-range access); if several programs hit it, suspect the GPU."
_RESET = "Drain the GPU, reset it (sudo nvidia-smi -r -i <index>) or reboot"
XIDS: dict[int, XidMeaning] = {
    13: XidMeaning("graphics engine exception", "warn", _APP),
    31: XidMeaning("GPU memory page fault", "warn", _APP),
    32: XidMeaning("invalid or corrupted push buffer stream", "problem",
                   "Often the PCIe link or system memory: check the card's seating and the host's ECC."),
    38: XidMeaning("driver firmware error", "problem", f"{_RESET}; update the driver if it repeats."),
    43: XidMeaning("GPU stopped processing", "warn",
                   "A program's kernel was stopped (often after its own fault); the GPU is usable."),
    45: XidMeaning("preemptive cleanup after earlier errors", "warn",
                   "Follows another error or a killed program; look at the Xid before it."),
    48: XidMeaning("double-bit ECC error", "problem",
                   f"{_RESET}; if it repeats, the GPU needs service (RMA)."),
    61: XidMeaning("internal micro-controller breakpoint", "problem", f"{_RESET}; update the driver."),
    62: XidMeaning("internal micro-controller halt", "problem", f"{_RESET}; update the driver."),
    63: XidMeaning("ECC page retirement or row remapping recorded", "warn",
                   f"{_RESET} to apply it; no service needed unless it keeps happening."),
    64: XidMeaning("ECC page retirement or row remapping failed", "problem",
                   "The memory can no longer repair itself: the GPU needs service (RMA)."),
    74: XidMeaning("NVLink error", "problem",
                   f"{_RESET}; check the NVLink bridges or the baseboard if it repeats."),
    79: XidMeaning("GPU has fallen off the bus", "problem",
                   "Reboot; if it repeats, check power, cooling and the card's seating or riser."),
    92: XidMeaning("high single-bit ECC error rate", "warn",
                   "Watch it: `nvidia-smi -q -d ECC,ROW_REMAPPER`; plan service if it grows."),
    94: XidMeaning("contained ECC error", "warn",
                   f"The programs on that GPU were stopped; {_RESET[0].lower() + _RESET[1:]} before reuse."),
    95: XidMeaning("uncontained ECC error", "problem",
                   f"{_RESET}: every program on that GPU was affected."),
    109: XidMeaning("context switch timeout", "warn", _APP),
    119: XidMeaning("GSP RPC timeout", "problem", f"{_RESET}; update the driver if it repeats."),
    120: XidMeaning("GSP error", "problem", f"{_RESET}; update the driver if it repeats."),
    140: XidMeaning("unrecovered ECC error", "problem", f"{_RESET}."),
    154: XidMeaning("GPU recovery action changed", "problem",
                    "The line says what is needed (GPU reset or node reboot): do that."),
}  # fmt: skip
UNKNOWN_XID = XidMeaning(
    "an Xid gpuwizard has no entry for", "warn", "Look it up in NVIDIA's Xid catalogue."
)


@dataclass(frozen=True)
class Xid:
    code: int
    pci: str
    """As the driver prints it: "0000:3b:00" (no function number)."""
    line: str

    @property
    def meaning(self) -> XidMeaning:
        return XIDS.get(self.code, UNKNOWN_XID)


def parse_xids(text: str) -> tuple[Xid, ...]:
    return tuple(
        Xid(int(m["xid"]), m["pci"].lower(), m.group(0).strip()) for m in _XID_LINE.finditer(text)
    )


def worst_first(xids: Sequence[Xid]) -> list[tuple[int, str, list[Xid]]]:
    """Grouped by (code, GPU), problems before warnings, then by code."""
    groups: dict[tuple[int, str], list[Xid]] = {}
    for xid in xids:
        groups.setdefault((xid.code, xid.pci), []).append(xid)
    ordered = sorted(
        groups.items(), key=lambda item: (item[1][0].meaning.level != "problem", item[0])
    )
    return [(code, pci, found) for (code, pci), found in ordered]
