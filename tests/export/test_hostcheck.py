"""The host check (issue 14): deploy.sh and the playbook record the facts their plan was made
from (GPUs, OS, CPU architecture, loaded driver branch) and refuse a host that differs, before
any change, naming each difference, unless forced. The shell reader and gpuwizard's own facts
agree on every recorded host."""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from gpuwizard.export.ansible import render_ansible
from gpuwizard.export.answers import made_on
from gpuwizard.export.bash import render_bash
from gpuwizard.export.bash_runtime import runtime
from gpuwizard.export.hostcheck import (
    FIELDS,
    IDENTITY_SH,
    HostIdentity,
    fact_word,
    host_differences,
    identity,
    in_words,
    same_for,
)
from gpuwizard.machine.detect import detect_host
from gpuwizard.sim.machine import sandbox_host
from gpuwizard.sim.pathshims import make_pathshims, run_script
from gpuwizard.sim.sandbox import create, place_for
from tests.conftest import facts_of
from tests.export.conftest import source_for

H100 = "h100x8-ubuntu2204-fresh"
T4 = "t4-debian12-fresh"
PROFILES = [
    "a100x4-ubuntu2004-fresh", "a100x8-ubuntu2204-neglected", H100, "h200-ubuntu2404-driver570",
    "l40sx4-rocky9-fresh", "nogpu-ubuntu2204", "rtx5090-ubuntu2404-secureboot", T4,
    "v100x4-ubuntu2204-driver535",
]  # fmt: skip
"""Every recorded host but WSL's, whose GPUs only the Windows driver shows."""


def test_the_recorded_facts_of_a_host() -> None:
    assert identity(facts_of(T4)) == HostIdentity(
        "1x 10de:1eb8", "debian 12", "x86_64", "none", "1x Tesla T4"
    )
    assert identity(facts_of("h200-ubuntu2404-driver570")).driver == "570"


def test_each_difference_is_named_with_both_values() -> None:
    made, here = identity(facts_of(H100)), identity(facts_of(T4))
    assert host_differences(made, here) == [
        "GPUs: made for 8x 10de:2330, this host has 1x 10de:1eb8",
        "OS: made for ubuntu 22.04, this host has debian 12",
    ]
    assert host_differences(made, here, gpus=False) == [
        "OS: made for ubuntu 22.04, this host has debian 12"
    ]
    assert host_differences(made, made) == []


def sandbox_root(tmp_path: Path, profile: str) -> Path:
    return create(place_for(profile, tmp_path / "home")).root


@pytest.mark.parametrize("profile", PROFILES)
def test_the_shell_reads_what_gpuwizard_recorded(tmp_path: Path, profile: str) -> None:
    root = sandbox_root(tmp_path, profile)
    read = subprocess.run(
        ["bash", "-c", f"gw_root={root}\n{IDENTITY_SH}"], capture_output=True, text=True, check=True
    )
    made = identity(facts_of(profile))
    assert read.stdout.splitlines() == [made.gpus, made.os, made.arch, made.driver]


def deploy_on(tmp_path: Path, made_on: str, host: str, *args: str, **env: str):
    place = place_for(host, tmp_path / "home")
    sandbox = create(place)
    script = tmp_path / "deploy.sh"
    script.write_text(render_bash(source_for(made_on), test_build=True))
    return sandbox, run_script(script, sandbox, make_pathshims(tmp_path / "bin"), args, env)


def test_deploy_sh_refuses_another_kind_of_host_before_any_change(tmp_path: Path) -> None:
    sandbox, run = deploy_on(tmp_path, H100, T4)

    assert run.code == 1, run.output
    [line] = [x for x in run.output.splitlines() if x.startswith("deploy.sh:")]
    assert "this host is not the kind the plan was made for:" in line
    assert "GPUs: made for 8x 10de:2330, this host has 1x 10de:1eb8" in line
    assert "OS: made for ubuntu 22.04, this host has debian 12" in line
    assert "Nothing was changed" in line and "--force (GPUWIZARD_FORCE=1)" in line
    assert not sandbox.calls.exists() or sandbox.calls.read_text() == "", "no tool ran"
    assert not (sandbox.root / "var/lib/gpuwizard/deploy").exists(), "not even a marker folder"


def test_a_loaded_driver_the_plan_did_not_see_is_a_difference(tmp_path: Path) -> None:
    sandbox = create(place_for(H100, tmp_path / "home"))
    (sandbox.root / "sys/module/nvidia").mkdir(parents=True)
    (sandbox.root / "sys/module/nvidia/version").write_text("570.86.15\n")  # loaded elsewhere
    script = tmp_path / "deploy.sh"
    script.write_text(render_bash(source_for(H100), test_build=True))

    run = run_script(script, sandbox, make_pathshims(tmp_path / "bin"))

    assert run.code == 1
    assert "loaded NVIDIA driver branch: made for none, this host has 570" in run.output


@pytest.mark.parametrize("force", [("--force",), ()])
def test_force_runs_it_anyway_and_says_so(tmp_path: Path, force: tuple[str, ...]) -> None:
    env = {} if force else {"GPUWIZARD_FORCE": "1"}
    _, run = deploy_on(tmp_path, H100, T4, *force, **env)

    assert "this host differs from the plan's: GPUs: made for 8x 10de:2330" in run.output
    assert "going on (--force)" in run.output
    assert "==> [1/" in run.output, "the steps ran"


def test_the_playbook_checks_the_host_before_anything_else() -> None:
    [play] = yaml.safe_load(render_ansible(source_for(H100)))
    read, check = play["tasks"][:2]
    assert read["ansible.builtin.command"]["argv"][:2] == ["bash", "-c"]
    assert read["check_mode"] is False and read["changed_when"] is False
    assert check["ansible.builtin.assert"]["that"] == "item.1 == item.0.value"
    assert "gpuwizard_force" in check["when"]
    assert [(m["label"], m["value"]) for m in play["vars"]["gpuwizard_made_for"]] == [
        ("GPUs", "8x 10de:2330"), ("OS", "ubuntu 22.04"), ("CPU architecture", "x86_64"),
        ("loaded NVIDIA driver branch", "none"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "made", "here", "script", "replay"),
    [
        ("gpus", "8x 10de:2330", "8x 10de:2330", True, True),
        ("gpus", "8x 10de:2330", "4x 10de:2330", False, True),
        ("gpus", "8x 10de:2330", "8x 10de:2331", False, False),
        ("gpus", "none", "1x 10de:2330", False, False),
        ("os", "rocky 9.4", "rocky 9.6", False, True),
        ("os", "rocky 9.6", "rocky 9.4", False, False),
        ("os", "rocky 8.10", "rocky 9.6", False, False),
        ("os", "ubuntu 22.04", "ubuntu 24.04", False, False),
        ("os", "debian 12", "debian 12", True, True),
        ("arch", "x86_64", "aarch64", False, False),
        ("driver", "570", "580", False, False),
        ("driver", "none", "none", True, True),
    ],
)
def test_one_rule_for_scripts_and_replays(
    name: str, made: str, here: str, script: bool, replay: bool
) -> None:
    assert same_for("script", name, made, here) is script
    assert same_for("replay", name, made, here) is replay


def test_deploy_sh_names_the_facts_the_rule_compares_in_its_order() -> None:
    """The shell check's labels are rendered from FIELDS: the rule and the script cannot drift."""
    labels = " ".join(shlex.quote(label) for _, label in FIELDS)
    made = " ".join(f'"$GW_MADE_{name.upper()}"' for name, _ in FIELDS)
    assert f"local -a labels=({labels})" in runtime()
    assert f"local -a made=({made})" in runtime()


@pytest.mark.parametrize("profile", [*PROFILES, "wsl2-ubuntu2204-rtx4090"])
def test_every_export_names_the_machine_as_the_host_check_does(profile: str) -> None:
    """One projection of the facts for people: the answers' made_on, the exports' headers and
    the host check's messages say the same GPUs."""
    facts = facts_of(profile)
    names = identity(facts).gpu_names
    assert made_on(facts).gpu == names
    assert in_words(facts).startswith(f"{names}, ")


OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"
HOSTILE_VERSION = f"22.04{OSC52}\u202e"


def test_a_hostile_os_release_reaches_neither_the_script_nor_its_refusal(tmp_path: Path) -> None:
    """VERSION_ID with an OSC 52 clipboard write: deploy.sh recorded it as GW_MADE_OS and its
    host check printed it to root's terminal (issue 28). Both sides now read each byte outside
    [A-Za-z0-9._-] as "?", so they still agree, and nothing acts on a terminal."""
    made_on = place_for(H100, tmp_path / "made")
    sandbox = create(made_on)
    release = sandbox.root / "etc/os-release"
    release.write_text(
        release.read_text().replace('VERSION_ID="22.04"', f'VERSION_ID="{HOSTILE_VERSION}"')
    )
    read = subprocess.run(
        ["bash", "-c", f"gw_root={shlex.quote(str(sandbox.root))}\n{IDENTITY_SH}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    facts = detect_host(sandbox_host(sandbox))
    assert facts.os is not None and facts.os.version_id == HOSTILE_VERSION
    made = identity(facts)
    assert read.stdout.splitlines()[1] == made.os == "ubuntu 22.04??52?c?cm0gLXJmIH4?????"
    source = dataclasses.replace(source_for(H100), facts=facts)
    script = render_bash(source, test_build=True)
    assert "\x1b" not in script and "\u202e" not in script

    path = tmp_path / "deploy.sh"
    path.write_text(script)
    target = create(place_for(T4, tmp_path / "home"))
    run = run_script(path, target, make_pathshims(tmp_path / "bin"))
    assert run.code == 1
    assert "OS: made for ubuntu 22.04??52?c?cm0gLXJmIH4?????, this host has debian 12" in run.output
    assert "\x1b" not in run.output and "\x07" not in run.output


def test_the_facts_read_on_the_target_are_cleaned_as_gpuwizard_records_them(tmp_path: Path) -> None:
    root = sandbox_root(tmp_path, T4)
    (root / "etc/os-release").write_text(f"ID=debian\nVERSION_ID='12{OSC52}'\n")
    read = subprocess.run(
        ["bash", "-c", f"gw_root={shlex.quote(str(root))}\n{IDENTITY_SH}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert read.stdout.splitlines()[1] == "debian 12??52?c?cm0gLXJmIH4??"
    assert fact_word(f"12{OSC52}") == "12??52?c?cm0gLXJmIH4??"
    assert fact_word("22.04\u202e") == "22.04???", "one ? per byte, as bash reads it under LC_ALL=C"
