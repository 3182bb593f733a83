"""The NVIDIA GPU catalogue: PCI device id -> model name, architecture and driver facts.

Names come from ``nvidia_pci.tsv``, generated from pci.ids by ``tools/gen_nvidia_pci_table.py``
(a newer system pci.ids can supply names for ids the shipped table lacks; see
``wizard/machine/detect/pci.py``). Architecture, compute capability, the last driver branch and the
open-kernel-module rule are derived here from the chip codename that pci.ids puts in front of
every name ("GH100 [H100 SXM5 80GB]" -> Hopper, 9.0), so a new id of a known chip needs no code.

Sources (see ``recommend/compat.yaml`` for the full list): compute capabilities from
developer.nvidia.com/cuda-gpus [S11]; open modules on Turing and later, required on Grace Hopper
and Blackwell [S13][S14][S17]; R580 is the last branch for Maxwell, Pascal and Volta [S16],
R470 for Kepler [S30]. Pure: reads only its own package data.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

OpenModules = Literal["required", "supported", "unsupported", "unknown"]
DeviceKind = Literal["gpu", "nvswitch"]

NVIDIA_VENDOR = "10de"


@dataclass(frozen=True)
class ChipRule:
    """A chip codename pattern and what it means: architecture, compute capability, driver."""

    pattern: str
    arch: str
    compute_capability: str
    last_driver_branch: str | None
    """The newest driver branch that supports this chip; None while current branches do."""


# Order matters: the first matching pattern wins (GB10B before GB10, GA100 before GA10x).
# pci.ids names the chip of the GB10 (DGX Spark, 10de:2e12) "GB20B"; its compute capability is
# 12.1 (sm_121: CUDA 12.9 release notes [S10]; "SPARK (sm_121)" in PyTorch PR #161257 [ARM]).
CHIP_RULES: tuple[ChipRule, ...] = (
    ChipRule(r"GF1\d\d", "Fermi", "2.0", "390"),
    ChipRule(r"GK10[4-7]", "Kepler", "3.0", "470"),
    ChipRule(r"GK210", "Kepler", "3.7", "470"),
    ChipRule(r"GK(11\d|180|208)B?", "Kepler", "3.5", "470"),
    ChipRule(r"GM10[78]", "Maxwell", "5.0", "580"),
    ChipRule(r"GM20[046]", "Maxwell", "5.2", "580"),
    ChipRule(r"GP100", "Pascal", "6.0", "580"),
    ChipRule(r"GP10[2-8]", "Pascal", "6.1", "580"),
    ChipRule(r"GV100", "Volta", "7.0", "580"),
    ChipRule(r"TU1\d\d", "Turing", "7.5", None),
    ChipRule(r"GA100", "Ampere", "8.0", None),
    ChipRule(r"GA10[2-7]", "Ampere", "8.6", None),
    ChipRule(r"AD10\d", "Ada Lovelace", "8.9", None),
    ChipRule(r"GH100", "Hopper", "9.0", None),
    ChipRule(r"GB10[02]", "Blackwell", "10.0", None),
    ChipRule(r"GB110", "Blackwell Ultra", "10.3", None),
    ChipRule(r"GB10B", "Blackwell", "11.0", None),
    ChipRule(r"GB10|GB20B", "Blackwell", "12.1", None),
    ChipRule(r"GB20[2-7]", "Blackwell", "12.0", None),
)

_FIRST_OPEN_MAJOR = 7.5  # open kernel modules: "any Turing or later GPU" [S13]

# Nominal memory for models whose pci.ids name does not carry it (NVIDIA datasheets). Used only
# for sizing advice before a driver exists; NVML's figure replaces it once one does.
_MEMORY_GIB: dict[str, int] = {
    "1eb8": 16,  # T4
    "2204": 24,  # RTX 3090
    "2230": 48,  # RTX A6000
    "2235": 48,  # A40
    "2236": 24,  # A10
    "2237": 24,  # A10G
    "20b7": 24,  # A30
    "25b6": 16,  # A2 / A16 (per GPU)
    "26b1": 48,  # RTX 6000 Ada
    "26b5": 48,  # L40
    "26b9": 48,  # L40S
    "2684": 24,  # RTX 4090
    "27b8": 24,  # L4
    "2331": 80,  # H100 PCIe
    "2324": 80,  # H800
    "233b": 141,  # H200 NVL
    "2342": 96,  # GH200 120GB/480GB: 96 GB HBM3 on the GPU, the rest is Grace memory
    "2348": 144,  # GH200 144G HBM3e
    "2901": 180,  # B200
    "2b85": 32,  # RTX 5090
    "2bb1": 96,  # RTX PRO 6000 Blackwell Workstation
    "2bb4": 96,  # RTX PRO 6000 Blackwell Max-Q
    "2bb5": 96,  # RTX PRO 6000 Blackwell Server
    "3182": 288,  # B300
}


@dataclass(frozen=True)
class GpuModel:
    """One NVIDIA PCI device id: its name, chip, architecture and what drivers it needs."""

    device_id: str
    """Four lowercase hex digits, vendor 10de implied."""
    name: str
    """Marketing name from pci.ids, e.g. "H100 SXM5 80GB" (chip codename stripped)."""
    chip: str
    arch: str
    """Architecture name ("Hopper"), or "unknown" for a chip this catalogue has no rule for."""
    compute_capability: str | None
    last_driver_branch: str | None
    open_modules: OpenModules
    memory_gib: int | None
    kind: DeviceKind = "gpu"

    @property
    def sm(self) -> str | None:
        """The CUDA architecture tag, e.g. "sm_90"."""
        cc = self.compute_capability
        return f"sm_{cc.replace('.', '')}" if cc else None

    @property
    def is_known(self) -> bool:
        return self.compute_capability is not None

    @property
    def is_integrated(self) -> bool:
        """Part of a system-on-chip (Jetson, Tegra): its driver and CUDA come with the board's
        own software (JetPack), never from a data-center driver branch."""
        return is_integrated(self.name)


@dataclass(frozen=True)
class PciIdEntry:
    """One NVIDIA line of pci.ids: device id, chip codename, name, GPU or NVSwitch."""

    device_id: str
    chip: str
    name: str
    kind: DeviceKind


# "GV100GL" -> GV100, "GK110B" -> GK110B, "GB10B" -> GB10B; GL/GLM/M/BM suffixes mark variants.
_CHIP = re.compile(r"^(?P<chip>[A-Z]{2}\d{2,3}(?:B(?=[\s\[]|$))?)")


def split_pci_name(raw: str) -> tuple[str, str]:
    """ "GH100 [H100 SXM5 80GB]" -> ("GH100", "H100 SXM5 80GB"); names without brackets keep all."""
    match = _CHIP.match(raw)
    chip = match.group("chip") if match else ""
    bracket = re.search(r"\[(.+)\]", raw)
    return chip, (bracket.group(1) if bracket else raw).strip()


def chip_rule(chip: str) -> ChipRule | None:
    return next((rule for rule in CHIP_RULES if re.fullmatch(rule.pattern, chip)), None)


def open_modules_rule(chip: str, name: str, compute_capability: str | None) -> OpenModules:
    """Open kernel modules: unsupported before Turing, required on Grace Hopper and Blackwell."""
    if compute_capability is None:
        return "unknown"
    if chip.startswith("GB") or "GH200" in name:
        return "required"
    return "supported" if float(compute_capability) >= _FIRST_OPEN_MAJOR else "unsupported"


# pci.ids names every integrated NVIDIA GPU that has a PCI id after its product family:
# "GB10B [Jetson AGX Thor]", "Tegra on x86". NVIDIA's GPU Operator: "NVIDIA Jetson, or other
# embedded products with integrated GPUs, are not supported" [S18].
_INTEGRATED = re.compile(r"\b(Jetson|Tegra)\b")


def is_integrated(name: str) -> bool:
    """An integrated (system-on-chip) GPU, by the product family pci.ids names."""
    return _INTEGRATED.search(name) is not None


def model_from_entry(entry: PciIdEntry) -> GpuModel:
    rule = chip_rule(entry.chip)
    cc = rule.compute_capability if rule else None
    memory = _MEMORY_GIB.get(entry.device_id)
    if memory is None and (found := re.search(r"([0-9]{1,6})\s?GB\b", entry.name)):
        memory = int(found.group(1))
    return GpuModel(
        device_id=entry.device_id,
        name=entry.name,
        chip=entry.chip,
        arch=rule.arch if rule else "unknown",
        compute_capability=cc,
        last_driver_branch=rule.last_driver_branch if rule else None,
        open_modules=open_modules_rule(entry.chip, entry.name, cc),
        memory_gib=memory,
        kind=entry.kind,
    )


def parse_table(text: str) -> tuple[str, dict[str, PciIdEntry]]:
    """Parse the shipped TSV: returns (pci.ids version, device id -> entry)."""
    version = ""
    entries: dict[str, PciIdEntry] = {}
    for line in text.splitlines():
        if line.startswith("# pci.ids version:"):
            version = line.split(":", 1)[1].strip()
        if not line or line.startswith("#"):
            continue
        device_id, kind, chip, name = line.split("\t")
        if kind not in ("gpu", "nvswitch"):
            raise ValueError(f"nvidia_pci.tsv: bad kind {kind!r} for {device_id}")
        entries[device_id] = PciIdEntry(device_id, chip, name, kind)  # type: ignore[arg-type]
    return version, entries


@functools.cache
def shipped_table() -> tuple[str, dict[str, PciIdEntry]]:
    # Beside this module rather than through importlib.resources: the wizard is never zipped,
    # and detection's start-up time counts (importlib.resources costs ~5 ms to import).
    text = Path(__file__).with_name("nvidia_pci.tsv").read_text(encoding="utf-8")
    return parse_table(text)


def lookup(device_id: str) -> GpuModel | None:
    """The catalogue entry for a PCI device id ("2330"), or None when it is not an NVIDIA GPU."""
    entry = shipped_table()[1].get(device_id.lower())
    return model_from_entry(entry) if entry else None


def unknown_model(device_id: str, name: str = "") -> GpuModel:
    """A GPU the catalogue does not know: facts keep it, the recommender refuses it with a reason."""
    chip, clean = split_pci_name(name) if name else ("", f"NVIDIA device 10de:{device_id}")
    return model_from_entry(PciIdEntry(device_id, chip, clean, "gpu"))


def all_models() -> tuple[GpuModel, ...]:
    return tuple(
        model_from_entry(entry) for entry in shipped_table()[1].values() if entry.kind == "gpu"
    )


def _normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


_PCI_ID = re.compile(r"(?P<prefix>(?:0x)?10de:|0x)?(?P<id>[0-9a-fA-F]{4})")


def find_models(query: str) -> tuple[GpuModel, ...]:
    """Models matching a PCI id ("10de:2330", "2330") or every word of a name ("h100 sxm").

    A bare four-character query that is also a model word ("A100", "B200") is a name first;
    the best match comes first: the exact name, then models with known memory, then the shortest.
    """
    query = query.strip()
    match = _PCI_ID.fullmatch(query)
    if match and (match.group("prefix") or query.isdigit()):
        model = lookup(match.group("id"))
        return (model,) if model and model.kind == "gpu" else ()
    words = [w for w in _normalise(query).split() if w != "nvidia"]
    found = [m for m in all_models() if words and _matches(words, _normalise(m.name).split())]
    if not found and match:
        model = lookup(match.group("id"))
        return (model,) if model and model.kind == "gpu" else ()

    def rank(model: GpuModel) -> tuple[int, bool, str]:
        extra = set(_normalise(model.name).split()) - set(words) - _BRAND_WORDS
        return (len(extra), model.memory_gib is None, model.device_id)

    return tuple(sorted(found, key=rank))


_BRAND_WORDS = frozenset({"nvidia", "geforce", "tesla", "quadro"})


def _matches(words: list[str], tokens: list[str]) -> bool:
    """Words with digits must equal a token ("a10" is not "a100"); letters may be a prefix."""
    return all(
        word in tokens
        if any(ch.isdigit() for ch in word)
        else any(t.startswith(word) for t in tokens)
        for word in words
    )


def model_for_name(name: str) -> GpuModel | None:
    """The model behind a driver-reported name ("NVIDIA H100 80GB HBM3"), when it is unambiguous.

    Driver names and pci.ids names differ in detail, so when every word does not match, the
    model number alone (the first word with a digit) decides, if all its models share one
    architecture.
    """
    words = set(_normalise(name).split())
    found = find_models(name)
    if not found:
        number = next((w for w in _normalise(name).split() if any(c.isdigit() for c in w)), None)
        found = find_models(number) if number else ()
    fitting = [m for m in found if _same_form(words, m)] or list(found)
    if fitting and len({m.compute_capability for m in fitting}) == 1:
        return max(fitting, key=lambda m: len(words & set(_normalise(m.name).split())))
    return None


_FORMS = ("nvl", "pcie", "sxm")


def _forms(words: set[str]) -> set[str]:
    return {form for form in _FORMS for word in words if word.startswith(form)}


def _same_form(words: set[str], model: GpuModel) -> bool:
    """The driver names the PCIe and NVL boards so ("NVIDIA H100 PCIe", "NVIDIA H200 NVL"); a
    name without a form factor is the SXM board ("NVIDIA H200" is 10de:2335, H200 SXM 141GB:
    ../shared/hosts/h200-vm), never the NVL one that merely shares its words."""
    form = _forms(words)
    return _forms(set(_normalise(model.name).split())) <= (form or {"sxm"})
