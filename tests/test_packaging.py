"""The package layout promised in ARCHITECTURE P1-P8: one import name, nothing else installed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
MOUNTS = {"gpuwizard": "wizard", "gpuwizard.screens": "screens", "gpuwizard.steps": "steps"}


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def packages_on_disk() -> set[str]:
    found = set()
    for name, folder in MOUNTS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join((name, *relative.parts)) if relative.parts else name)
    return found


def modules_on_disk() -> list[str]:
    modules = []
    for name, folder in MOUNTS.items():
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in relative.parts if p != "__init__"]
            if "recorded-hosts" not in relative.parts:
                modules.append(".".join((name, *parts)))
    return sorted(modules)


def test_package_dir_is_exactly_the_three_mounts():
    assert pyproject()["tool"]["setuptools"]["package-dir"] == MOUNTS


def test_packages_list_matches_the_folders_with_init_files():
    assert set(pyproject()["tool"]["setuptools"]["packages"]) == packages_on_disk()


@pytest.mark.parametrize("module", modules_on_disk())
def test_every_module_on_disk_is_importable(module):
    assert importlib.util.find_spec(module) is not None
    importlib.import_module(module)


@pytest.mark.parametrize("name", ["wizard", "screens", "steps"])
def test_folder_names_are_not_importable(tmp_path, name):
    result = subprocess.run(
        [sys.executable, "-c", f"import {name}"], cwd=tmp_path, capture_output=True, check=False
    )
    assert result.returncode != 0


def test_the_wheel_holds_only_gpuwizard(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("gpuwizard-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"gpuwizard", wheel.name.split("-py3")[0] + ".dist-info"}
    assert "gpuwizard/recommend/compat.yaml" in names and "gpuwizard/core/nvidia_pci.tsv" in names
    assert any(
        n.startswith("gpuwizard/sim/recorded-hosts/h100x8-ubuntu2204-fresh/root/") for n in names
    )
    vm = "gpuwizard/sim/recorded-hosts/h200-vm-ubuntu2404-preinstalled/root"
    assert f"{vm}/.dockerenv" in names, "a dotfile: glob's * alone would leave it out"
    assert f"{vm}/opt/torch/.venv/pyvenv.cfg" in names, "in a dot folder, likewise"
    assert "gpuwizard/py.typed" in names


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = next(
        line.strip()
        for line in ci.splitlines()
        if line.strip().startswith("python3 -m venv .venv &&")
    )
    assert command in readme
