from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from gpuwizard.core import gpus

ROOT = Path(__file__).resolve().parents[2]

# A slice of pci.ids in its real format (tabs, comments, subsystem lines, a second vendor).
PCI_IDS = """#
#\tList of PCI IDs
#\tVersion: 2026.08.22
#
10de  NVIDIA Corporation
\t1af1  GA100 [A100 NVSwitch]
\t1db1  GV100GL [Tesla V100 SXM2 16GB]
\t\t10de 1212  Tesla V100-SXM2-16GB
\t1eb8  TU104GL [Tesla T4]
\t22e8  GB202 High Definition Audio Controller
\t2330  GH100 [H100 SXM5 80GB]
\t2b85  GB202 [GeForce RTX 5090]
\t0ff3  GK107GL [Quadro K420]
10df  Emulex Corporation
\t1ae5  LP6000 Fibre Channel Host Adapter
"""


def load_generator():
    spec = importlib.util.spec_from_file_location(
        "gen_nvidia_pci_table", ROOT / "tools" / "gen_nvidia_pci_table.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("device_id", "arch", "cc", "open_modules", "last_branch"),
    [
        pytest.param(
            "1db1", "Volta", "7.0", "unsupported", "580", id="V100: proprietary only, R580 last"
        ),
        pytest.param("1eb8", "Turing", "7.5", "supported", None, id="T4"),
        pytest.param("20b0", "Ampere", "8.0", "supported", None, id="A100"),
        pytest.param("26b9", "Ada Lovelace", "8.9", "supported", None, id="L40S"),
        pytest.param("2330", "Hopper", "9.0", "supported", None, id="H100 SXM5"),
        pytest.param("2342", "Hopper", "9.0", "required", None, id="GH200 needs open modules"),
        pytest.param("2901", "Blackwell", "10.0", "required", None, id="B200"),
        pytest.param("3182", "Blackwell Ultra", "10.3", "required", None, id="B300"),
        pytest.param("2b85", "Blackwell", "12.0", "required", None, id="RTX 5090"),
        pytest.param("102d", "Kepler", "3.7", "unsupported", "470", id="K80: R470 last"),
        pytest.param("1b80", "Pascal", "6.1", "unsupported", "580", id="GTX 1080"),
    ],
)
def test_the_catalogue_knows_architecture_and_driver_facts(
    device_id, arch, cc, open_modules, last_branch
):
    model = gpus.lookup(device_id)
    assert model is not None
    assert (model.arch, model.compute_capability, model.open_modules, model.last_driver_branch) == (
        arch,
        cc,
        open_modules,
        last_branch,
    )


def test_the_shipped_table_records_its_pci_ids_version():
    version, entries = gpus.shipped_table()
    assert version == "2026.08.22"
    assert len(entries) > 900
    assert entries["22a3"].kind == "nvswitch"


@pytest.mark.parametrize(
    ("query", "device_id"),
    [
        ("10de:2330", "2330"),
        ("0x2330", "2330"),
        ("2330", "2330"),
        ("A100", "20b0"),
        ("h100 sxm", "2330"),
        ("T4", "1eb8"),
        ("RTX 5090", "2b85"),
        ("GTX 1080", "1b80"),
        ("A10", "2236"),
        ("B200", "2901"),
    ],
)
def test_gpus_are_found_by_pci_id_or_name(query, device_id):
    assert gpus.find_models(query)[0].device_id == device_id


def test_an_unknown_name_finds_nothing():
    assert gpus.find_models("Voodoo 5") == ()
    assert gpus.find_models("10de:ffff") == ()


@pytest.mark.parametrize(
    ("driver_name", "device_id"),
    [
        ("NVIDIA A100-SXM4-40GB", "20b0"),
        ("Tesla V100-SXM2-16GB", "1db1"),
        ("NVIDIA GeForce RTX 4090", "2684"),
        ("NVIDIA H200 NVL", "233b"),
        ("NVIDIA H200", "2335"),  # the SXM board (shared/hosts/h200-vm: 0x233510DE), not the NVL
        ("NVIDIA H100 80GB HBM3", "2330"),  # H100 SXM5 80GB: the most words in common
        ("NVIDIA H100 PCIe", "2331"),
        ("Tesla T4", "1eb8"),
    ],
)
def test_driver_reported_names_map_to_models(driver_name, device_id):
    model = gpus.model_for_name(driver_name)
    assert model is not None and model.device_id == device_id


def test_an_unknown_chip_is_kept_as_unknown_rather_than_guessed():
    model = gpus.unknown_model("ffff", "GR100 [Rubin Engineering Sample]")
    assert (
        model.arch == "unknown" and not model.is_known and model.name == "Rubin Engineering Sample"
    )


def test_the_generator_keeps_gpus_and_switches_and_drops_other_functions():
    generator = load_generator()
    rows = generator.rows(PCI_IDS)
    assert [r[0] for r in rows] == ["1af1", "1db1", "1eb8", "2330", "2b85", "0ff3"]
    assert rows[0][1] == "nvswitch"
    text = generator.render(PCI_IDS)
    version, entries = gpus.parse_table(text)
    assert version == "2026.08.22"
    assert entries["2330"].name == "H100 SXM5 80GB" and entries["2330"].chip == "GH100"


def test_a_malformed_table_line_fails_loudly():
    with pytest.raises(ValueError, match="bad kind"):
        gpus.parse_table("2330\tdisplay\tGH100\tH100\n")


@pytest.mark.parametrize(
    ("count", "noun", "plural", "said"),
    [(1, "GPU", None, "1 GPU"), (8, "GPU", None, "8 GPUs"), (0, "GPU", None, "0 GPUs"),
     (2, "process", "processes", "2 processes"), (1, "process", "processes", "1 process")],
)  # fmt: skip
def test_a_count_says_its_noun_in_the_right_number(count, noun, plural, said):
    from gpuwizard.core.machine_words import counted

    assert counted(count, noun, plural) == said
