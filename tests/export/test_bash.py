"""deploy.sh (``render_bash``): golden files, bash and shellcheck, and the script's behaviour run
for real against fake tools in a temporary root: markers and reruns, reboots, failures, files,
downloads, secrets and the resume unit.

Regenerate the golden files on purpose, after reviewing the change, with
``GPUWIZARD_UPDATE_GOLDEN=1 pytest tests/export``.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from gpuwizard.core.ops import (
    AptUpdate,
    Command,
    Download,
    DownloadCheck,
    Fingerprint,
    NoPin,
    Sha256,
)
from gpuwizard.core.plan import SecretRef, StepPlan, Target, WriteFile
from gpuwizard.export.bash import render_bash
from gpuwizard.export.source import ExportError, ExportSource
from gpuwizard.runner.keycheck import armor, checked_key, dearmor
from tests.export.conftest import ALL_OPTIONS, PROFILES, check_golden, mok_source, source_for
from tests.export.deploy_harness import Deploy, source_with

SHELLCHECK = str(Path(sys.executable).parent / "shellcheck")
CANARY = "Pw-c4n4ry-'\"$(touch pwned)`touch pwned`\\-Ä密"


def cases() -> dict[str, ExportSource]:
    found = {profile: source_for(profile) for profile in PROFILES}
    found["a100x4-ubuntu2004-fresh-all-options"] = source_for(
        "a100x4-ubuntu2004-fresh", ALL_OPTIONS
    )
    found["rtx5090-ubuntu2404-secureboot-all-options"] = source_for(
        "rtx5090-ubuntu2404-secureboot", ALL_OPTIONS
    )
    found["t4-debian12-secureboot-mok"] = mok_source()
    return found


CASES = cases()


# --------------------------------------------------------------------------- golden and lint
@pytest.mark.parametrize("name", CASES)
def test_deploy_sh_matches_its_golden_file(name):
    check_golden(name, "deploy.sh", render_bash(CASES[name]))


@pytest.mark.parametrize("name", CASES)
def test_deploy_sh_is_valid_bash_and_shellcheck_clean(name, tmp_path):
    script = tmp_path / "deploy.sh"
    script.write_text(render_bash(CASES[name]), encoding="utf-8")
    syntax = subprocess.run(
        ["bash", "-n", str(script)], capture_output=True, text=True, check=False
    )
    assert syntax.returncode == 0, syntax.stderr
    lint = subprocess.run(
        [SHELLCHECK, "--severity=style", str(script)], capture_output=True, text=True, check=False
    )
    assert lint.returncode == 0, lint.stdout


@pytest.mark.parametrize("name", CASES)
def test_deploy_sh_runs_every_planned_host_command_in_plan_order(name):
    source = CASES[name]
    script = render_bash(source)
    assert script.startswith("#!/usr/bin/env bash\n")
    assert "\nset -Eeuo pipefail\n" in script
    header = script.split("\nset -Eeuo")[0]
    assert source.machine in header
    for line in source.plan.summary:
        assert f"#   {line}\n" in header
    position = script.index("gw_start")
    for planned in source.plan.steps:
        if Target.HOST not in planned.targets or not planned.actions:
            position = script.index(f"# --- {planned.id}: ", position)
            continue
        for action in planned.actions:
            words = (
                [shlex.quote(action.path)]
                if isinstance(action, WriteFile)
                else [shlex.quote(f"{k}={v}") for k, v in action.command().env.items()]
                + [shlex.quote(word) for word in action.command().argv[1:]]
            )
            for word in words:
                position = script.index(word, position) + len(word)
            if planned.reboot:
                break
        assert script.index(f"gw_done {planned.id}\n" if not planned.reboot else "fi\n", position)
    assert script.endswith("\ngw_finish 'every step of the plan is finished'\n")


def test_the_mok_password_is_asked_for_by_name_and_never_part_of_the_script():
    script = render_bash(mok_source())
    assert "#   GPUWIZARD_SECRET_MOK_PASSWORD: One-time MOK password" in script
    assert (
        "gw_read_secret gw_secret_mok_password gw_env_mok_password GPUWIZARD_SECRET_MOK_PASSWORD"
        in script
    )
    assert (
        'gw_replies "$gw_secret_mok_password" "$gw_secret_mok_password" | gw_run --stdin' in script
    )


# -------------------------------------------------------------------------------- behaviour
def step(step_id: str, *actions: Command | WriteFile, **fields: object) -> StepPlan:
    return StepPlan(step_id, fields.pop("title", f"Step {step_id}"), "why", actions, **fields)


def tool(*args: str, **fields: object) -> Command:
    return Command(("fake-tool", *args), **fields)


REBOOT = step("reboot", Command(("reboot",)), reboot=True, needs_reboot=True, title="Reboot")


def test_a_rerun_skips_finished_steps_and_a_reboot_step_waits_for_a_new_boot_id(tmp_path):
    machine = Deploy(tmp_path)
    machine.write_script(source_with([step("one", tool("1")), REBOOT, step("two", tool("2"))]))

    first = machine.run()
    assert first.code == 10, first.output
    assert "==> reboot needed: reboot now (sudo reboot), then run this script again" in first.output
    assert machine.argvs() == [["fake-tool", "1"]], "without --reboot nothing reboots"
    assert machine.path("/var/lib/gpuwizard/deploy/reboot.done").read_text() == "boot-1\n"

    same_boot = machine.run()
    assert same_boot.code == 10
    assert "[1/3] Step one: skip (done before)" in same_boot.output
    assert "the machine has not rebooted since this step asked for it" in same_boot.output

    machine.set_boot_id("boot-2")
    after = machine.run()
    assert after.code == 0, after.output
    assert "[2/3] Reboot: skip (done before)" in after.output
    assert machine.argvs() == [["fake-tool", "1"], ["fake-tool", "2"]]
    assert machine.markers() == ["one.done", "reboot.done", "two.done"]
    assert machine.run().code == 0
    assert len(machine.calls()) == 2, "a third run changes nothing"


def test_with_reboot_the_script_runs_the_plans_reboot_command_and_exits_10(tmp_path):
    machine = Deploy(tmp_path)
    machine.write_script(source_with([step("one", tool("1")), REBOOT, step("two", tool("2"))]))
    result = machine.run(env={"GPUWIZARD_REBOOT": "1"})
    assert result.code == 10
    assert machine.argvs() == [["fake-tool", "1"], ["reboot"]]
    assert machine.run("--reboot").code == 10, "the boot_id did not change: reboot again"
    assert machine.argvs()[-1] == ["reboot"]


def test_a_failed_command_stops_the_script_unmarked_and_a_rerun_resumes_there(tmp_path):
    machine = Deploy(tmp_path)
    machine.write_script(
        source_with([step("one", tool("1")), step("two", tool("2a"), Command(("other-tool",)))])
    )
    failed = machine.run(env={"FAKE_EXIT_other_tool": "3"})
    assert failed.code == 3
    assert "deploy.sh: step two failed (exit status 3" in failed.output
    assert machine.markers() == ["one.done"]
    fixed = machine.run()
    assert fixed.code == 0, fixed.output
    first_try, rerun = (
        [["fake-tool", "1"], ["fake-tool", "2a"], ["other-tool"]],
        machine.argvs()[3:],
    )
    assert machine.argvs()[:3] == first_try
    assert rerun == [["fake-tool", "2a"], ["other-tool"]], "the failed step runs again whole"


def test_ok_codes_creates_and_per_command_environment(tmp_path):
    machine = Deploy(tmp_path)
    machine.path("/exists").write_text("")
    machine.write_script(
        source_with(
            [
                step(
                    "one",
                    Command(("other-tool",), ok_codes=(0, 2)),
                    tool("skipped", creates="/exists"),
                    tool("runs", creates="/missing", env={"GW_TEST_A": "a b", "GW_TEST_B": "$x"}),
                    tool("plain"),
                )
            ]
        )
    )
    result = machine.run(env={"FAKE_EXIT_other_tool": "2"})
    assert result.code == 0, result.output
    calls = machine.calls()
    assert [c["argv"] for c in calls] == [
        ["other-tool"],
        ["fake-tool", "runs"],
        ["fake-tool", "plain"],
    ]
    assert calls[1]["env"] == {"GW_TEST_A": "a b", "GW_TEST_B": "$x"}
    assert calls[2]["env"] == {}, "each command gets its own environment, not the one before's"


def test_files_are_written_exactly_with_their_mode_and_restored_when_the_step_fails(tmp_path):
    machine = Deploy(tmp_path)
    machine.path("/etc/kept.json").parent.mkdir(parents=True)
    machine.path("/etc/kept.json").write_text("original\n")
    tricky = "no newline at the end\nGPUWIZARD_EOF\n'$(touch pwned)'"
    machine.write_script(
        source_with(
            [
                step("files", WriteFile("/etc/a/tricky.conf", tricky, 0o600)),
                step(
                    "daemon",
                    WriteFile("/etc/kept.json", "new\n", backup=True),
                    Command(("other-tool",)),
                ),
            ]
        )
    )
    assert machine.run(env={"FAKE_EXIT_other_tool": "1"}).code == 1
    written = machine.path("/etc/a/tricky.conf")
    assert written.read_bytes() == tricky.encode()
    assert written.stat().st_mode & 0o777 == 0o600
    assert machine.path("/etc/kept.json").read_text() == "original\n", "restored after the failure"
    assert not list(tmp_path.rglob("pwned"))
    assert machine.run().code == 0
    assert machine.path("/etc/kept.json").read_text() == "new\n"
    assert machine.path("/etc/kept.json.gpuwizard-bak").read_text() == "original\n"
    assert not list(machine.path("/etc").rglob(".gpuwizard-tmp.*"))


def test_apt_get_update_is_tried_again_after_a_failure_as_the_runner_does(tmp_path):
    machine = Deploy(tmp_path)
    machine.write_script(source_with([step("lists", AptUpdate())]))
    result = machine.run(env={"FAKE_FAILS_apt_get": "1"})
    assert result.code == 0, result.output
    assert "exit status 100; trying again in 2 s (1 of 5)" in result.output
    assert machine.argvs() == [["apt-get", "-q", "update"], ["apt-get", "-q", "update"]]


def test_no_other_command_is_tried_again(tmp_path):
    machine = Deploy(tmp_path)
    machine.write_script(source_with([step("lists", Command(("other-tool", "update")))]))
    result = machine.run(env={"FAKE_FAILS_other_tool": "1"})
    assert result.code == 100, result.output
    assert machine.argvs() == [["other-tool", "update"]]


# ------------------------------------------------------------------------------- downloads
def fetch_step(url: str, dest: str, check: DownloadCheck | None = None, **fields: Any) -> StepPlan:
    return step("get", Download(url, dest, check or NoPin(), **fields))


def test_a_download_is_kept_only_when_its_sha256_matches(tmp_path):
    machine = Deploy(tmp_path)
    machine.serve("https://example.com/a.deb", b"package")
    good = hashlib.sha256(b"package").hexdigest()
    machine.write_script(
        source_with([fetch_step("https://example.com/a.deb", "/var/cache/a.deb", Sha256("0" * 64))])
    )
    bad = machine.run()
    assert bad.code == 1
    assert f"SHA-256 mismatch for https://example.com/a.deb: got {good}" in bad.output
    assert not list(machine.path("/var/cache").iterdir()), "neither the file nor its .part is left"

    machine.write_script(
        source_with(
            [fetch_step("https://example.com/a.deb", "/var/cache/a.deb", Sha256(good.upper()))]
        )
    )
    assert machine.run().code == 0
    assert machine.path("/var/cache/a.deb").read_bytes() == b"package"
    assert machine.path("/var/cache/a.deb").stat().st_mode & 0o777 == 0o644


def test_a_download_without_a_pin_is_refused_and_an_unconfirmed_one_warns(tmp_path):
    machine = Deploy(tmp_path)
    machine.serve("https://example.com/i.sh", b"#!/bin/sh\n")
    # A Download always carries its check; gw_fetch still refuses a call that has none.
    script = machine.write_script(
        source_with([fetch_step("https://example.com/i.sh", "/tmp/i.sh")])
    )
    script.write_text(script.read_text().replace(" --unpinned\n", "\n"))
    refused = machine.run()
    assert refused.code == 1
    assert "gw_fetch: https://example.com/i.sh has no pin; refusing to use it" in refused.output
    assert not machine.path("/tmp/i.sh").exists()

    machine.write_script(
        source_with([fetch_step("https://example.com/i.sh", "/tmp/i.sh", NoPin())])
    )
    warned = machine.run()
    assert warned.code == 0, warned.output
    assert "WARNING: https://example.com/i.sh has no pinned checksum" in warned.output
    assert machine.path("/tmp/i.sh").read_bytes() == b"#!/bin/sh\n"


def test_curl_is_told_to_refuse_anything_but_https_even_on_a_redirect():
    script = render_bash(source_with([fetch_step("https://example.com/a", "/a", NoPin())]))
    assert (
        "gw_curl() { curl -fsSL --proto '=https' --proto-redir '=https' --retry 3 \"$@\"; }"
        in script
    )
    assert "\n  curl " not in script and "$(curl " not in script, (
        "every download goes through gw_curl"
    )


def test_a_pinned_pypi_wheel_is_found_in_the_index_checked_and_its_member_extracted(tmp_path):
    machine = Deploy(tmp_path)
    arch = os.uname().machine
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as wheel:
        wheel.writestr("uv-1.2.3.data/scripts/uv", b"\x7fELF uv")
    data = archive.getvalue()
    names = [
        f"uv-1.2.3-py3-none-manylinux_2_17_{arch}.manylinux2014_{arch}.whl",
        "uv-1.2.3.tar.gz",
        f"uv-1.2.4-py3-none-manylinux_2_17_{arch}.manylinux2014_{arch}.whl",
    ]
    files = [{"filename": n, "url": f"https://files.example/{n}"} for n in names]
    machine.serve("https://pypi.org/simple/uv/", json.dumps({"files": files}).encode())
    machine.serve(f"https://files.example/{names[0]}", data)
    machine.write_script(
        source_with(
            [
                fetch_step(
                    "pypi:uv==1.2.3", "/opt/bin/uv", Sha256(hashlib.sha256(data).hexdigest()),
                    member="uv-1.2.3.data/scripts/uv",
                )
            ]
        )
    )  # fmt: skip
    result = machine.run()
    assert result.code == 0, result.output
    assert machine.path("/opt/bin/uv").read_bytes() == b"\x7fELF uv"
    assert machine.path("/opt/bin/uv").stat().st_mode & 0o777 == 0o755


KEY = Path(__file__).parents[1] / "runner" / "keys" / "nvidia-docker-gpgkey.asc"
NVIDIA_OPEN_SOURCE = "C95B321B61E88C1809C4F759DDCAE044F796ECB0"
KEY_B = KEY.with_name("test-key-b.asc")
"""A second key (made for these tests, public part only): 8F3DB4AB...9FB2AD1A."""


def test_a_key_is_checked_against_its_pinned_fingerprint_and_dearmored_as_the_runner_does(tmp_path):
    machine = Deploy(tmp_path)
    armored = KEY.read_bytes()
    machine.serve("https://example.com/gpgkey", armored)
    machine.write_script(
        source_with(
            [fetch_step("https://example.com/gpgkey", "/usr/share/k.gpg", Fingerprint(NVIDIA_OPEN_SOURCE), dearmor=True)]
        )
    )  # fmt: skip
    result = machine.run()
    assert result.code == 0, result.output
    assert "(key fingerprint verified)" in result.output
    assert machine.path("/usr/share/k.gpg").read_bytes() == checked_key(armored, NVIDIA_OPEN_SOURCE)


@pytest.mark.parametrize(
    "trouble",
    ["another fingerprint", "a second key appended", "a second armoured block", "no key"],
)
@pytest.mark.parametrize("dearmor_it", [True, False], ids=["apt", "dnf"])
def test_a_key_that_is_not_exactly_the_pinned_one_is_refused_and_removed(
    tmp_path, trouble, dearmor_it
):
    """Key A then key B in one file passed the check for A and was installed whole (issue 28)."""
    machine = Deploy(tmp_path)
    binary = dearmor(KEY.read_bytes())
    served = {
        "another fingerprint": binary,
        "a second key appended": binary + dearmor(KEY_B.read_bytes()),
        "a second armoured block": KEY.read_bytes() + KEY_B.read_bytes(),
        "no key": b"<html>moved</html>",
    }[trouble]
    pinned = "A" * 40 if trouble == "another fingerprint" else NVIDIA_OPEN_SOURCE
    machine.serve("https://example.com/gpgkey", served)
    machine.write_script(
        source_with(
            [fetch_step("https://example.com/gpgkey", "/usr/share/keyrings/k.gpg", Fingerprint(pinned), dearmor=dearmor_it)]
        )
    )  # fmt: skip
    result = machine.run()
    assert result.code == 1
    assert "is not exactly one key, the one gpuwizard pins; it was deleted" in result.output
    assert not list(machine.path("/usr/share/keyrings").iterdir())


@pytest.mark.parametrize("dearmor_it", [True, False], ids=["apt", "dnf"])
def test_a_key_is_installed_alone_never_as_it_was_downloaded(tmp_path, dearmor_it):
    """Whatever the server adds around the key (headers, a comment) is not installed: the
    checked packets are, binary for apt's signed-by, freshly armoured for dnf's gpgkey."""
    machine = Deploy(tmp_path)
    served = KEY.read_bytes().replace(b"\n\n", b"\nComment: served with extras\n\n", 1)
    machine.serve("https://example.com/gpgkey", served)
    check = Fingerprint(NVIDIA_OPEN_SOURCE)
    machine.write_script(
        source_with([fetch_step("https://example.com/gpgkey", "/etc/k", check, dearmor=dearmor_it, armor=not dearmor_it)])
    )  # fmt: skip
    result = machine.run()
    assert result.code == 0, result.output
    keyring = checked_key(served, NVIDIA_OPEN_SOURCE)
    assert machine.path("/etc/k").read_bytes() == (keyring if dearmor_it else armor(keyring))
    assert b"served with extras" not in machine.path("/etc/k").read_bytes()


def test_an_unconfirmed_key_for_apt_is_still_one_key_and_stored_binary(tmp_path):
    """Debian 13's and Ubuntu 26.04's CUDA keys have no confirmed fingerprint (UNCONFIRMED):
    deploy.sh stored them armoured as .gpg, which apt's signed-by cannot read (issue 28)."""
    machine = Deploy(tmp_path)
    machine.serve("https://example.com/8793F200.pub", KEY.read_bytes())
    machine.serve("https://example.com/two.pub", KEY.read_bytes() + KEY_B.read_bytes())
    machine.write_script(
        source_with([fetch_step("https://example.com/8793F200.pub", "/usr/share/keyrings/cuda.gpg", NoPin(), dearmor=True)])
    )  # fmt: skip
    result = machine.run()
    assert result.code == 0, result.output
    assert "has no pinned checksum in gpuwizard's data (UNCONFIRMED)" in result.output
    assert machine.path("/usr/share/keyrings/cuda.gpg").read_bytes() == dearmor(KEY.read_bytes())

    two = Deploy(tmp_path / "two")
    two.serve("https://example.com/two.pub", KEY.read_bytes() + KEY_B.read_bytes())
    two.write_script(
        source_with([fetch_step("https://example.com/two.pub", "/usr/share/keyrings/cuda.gpg", NoPin(), dearmor=True)])
    )  # fmt: skip
    refused = two.run()
    assert refused.code == 1
    assert "is not exactly one key; it was deleted and not used" in refused.output
    assert not two.path("/usr/share/keyrings/cuda.gpg").exists()


# ---------------------------------------------------------------------------------- secrets
MOK = SecretRef("mok-password", "MOK password")
MOK_STEP = step(
    "enroll-mok",
    Command(
        ("mokutil", "--import", "/var/lib/dkms/mok.pub"), answers={"password:": MOK, "again:": MOK}
    ),
    needs_reboot=True,
)


def test_a_secret_from_the_environment_reaches_the_tool_on_stdin_and_no_file(tmp_path):
    machine = Deploy(tmp_path)
    machine.write_script(source_with([MOK_STEP]))
    result = machine.run(env={"GPUWIZARD_SECRET_MOK_PASSWORD": CANARY})
    assert result.code == 0, result.output
    expected = hashlib.sha256(f"{CANARY}\n{CANARY}\n".encode()).hexdigest()
    assert machine.calls()[0]["stdin_sha256"] == expected
    assert b"c4n4ry" not in result.output.encode()
    leaks = [p for p in tmp_path.rglob("*") if p.is_file() and b"c4n4ry" in p.read_bytes()]
    assert leaks == []
    assert not list(tmp_path.rglob("pwned"))
    assert [c["secret_env"] for c in machine.calls()] == [[]], "the secret left the environment"


def test_without_the_variable_or_a_terminal_the_script_stops_before_changing_anything(tmp_path):
    machine = Deploy(tmp_path)
    machine.write_script(source_with([step("first", tool("1")), MOK_STEP]))
    result = machine.run()
    assert result.code == 1
    assert "there is no terminal to ask on; set GPUWIZARD_SECRET_MOK_PASSWORD" in result.output
    assert machine.calls() == []
    assert machine.markers() == []


# ------------------------------------------------------------------- options, unit, refusal
def test_install_resume_unit_installs_a_unit_that_reruns_it_and_removes_it_when_done(tmp_path):
    machine = Deploy(tmp_path)
    machine.write_script(source_with([step("one", tool("1")), REBOOT, step("two", tool("2"))]))
    first = machine.run("--install-resume-unit", "--reboot")
    assert first.code == 10
    unit = machine.path("/etc/systemd/system/gpuwizard-deploy.service").read_text()
    assert "ExecStart=/bin/bash /var/lib/gpuwizard/deploy.sh --reboot\n" in unit
    assert "SuccessExitStatus=10\n" in unit
    assert "WantedBy=multi-user.target\n" in unit
    installed = machine.path("/var/lib/gpuwizard/deploy.sh")
    assert installed.read_bytes() == machine.script.read_bytes()
    assert installed.stat().st_mode & 0o777 == 0o700
    assert machine.argvs() == [
        ["fake-tool", "1"],
        ["systemctl", "daemon-reload"],
        ["systemctl", "enable", "gpuwizard-deploy.service"],
        ["reboot"],
    ], "installed when the first reboot comes"
    assert "==> rebooting; gpuwizard-deploy.service continues after the boot" in first.output
    machine.set_boot_id("boot-2")
    assert machine.run("--reboot").code == 0
    assert not machine.path("/etc/systemd/system/gpuwizard-deploy.service").exists()
    assert machine.argvs()[4:] == [
        ["fake-tool", "2"],
        ["systemctl", "disable", "gpuwizard-deploy.service"],
        ["systemctl", "daemon-reload"],
    ]


def test_help_unknown_options_and_a_second_run_at_the_same_time(tmp_path):
    machine = Deploy(tmp_path)
    machine.write_script(source_with([step("one", tool("1"))]))
    assert (
        "usage: sudo bash deploy.sh [--reboot] [--install-resume-unit]"
        in machine.run("--help").output
    )
    unknown = machine.run("--frobnicate")
    assert (unknown.code, "unknown option: --frobnicate" in unknown.output) == (1, True)
    lock = machine.path("/var/lib/gpuwizard/deploy/.lock")
    lock.parent.mkdir(parents=True)
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        busy = machine.run()
    assert busy.code == 1
    assert "another deploy.sh is at work on this machine" in busy.output
    assert machine.calls() == []


@pytest.mark.parametrize("name", CASES)
def test_the_shipped_script_has_no_test_hooks(name):
    script = render_bash(CASES[name])
    named = set(re.findall(r"GPUWIZARD_[A-Z_]+", script))
    assert named <= {
        "GPUWIZARD_REBOOT",
        "GPUWIZARD_FORCE",
        "GPUWIZARD_SECRET_MOK_PASSWORD",
        "GPUWIZARD_EOF",
        "GPUWIZARD_UNIT",
    }, named
    assert "GPUWIZARD_SHIM" in render_bash(CASES[name], test_build=True)


def test_it_refuses_to_run_as_anyone_but_root_whatever_the_environment_says(tmp_path):
    """GPUWIZARD_SHIM once waived the root check: under ``sudo -E`` a way in. Not any more."""
    script = render_bash(source_with([step("one", tool("1"))]))
    drop = (
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    )
    if drop and shutil.which("setpriv") is None:
        pytest.skip("running as root and setpriv is missing")
    done = subprocess.run(
        [*drop, "/bin/bash", "-s"],
        input=script,
        capture_output=True,
        text=True,
        cwd="/",
        env={
            "PATH": "/usr/bin:/bin",
            "GPUWIZARD_ROOT": str(tmp_path),
            "GPUWIZARD_SHIM": "/bin/true",
        },
        check=False,
    )
    assert done.returncode == 1
    assert "deploy.sh: run me as root: sudo bash" in done.stderr


# ----------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    ("action", "fragment"),
    [
        pytest.param(
            WriteFile("/etc/a\nb", "x"), "contains a newline", id="newline in a file path"
        ),
        pytest.param(WriteFile("/etc/a\0b", "x"), "contains a NUL byte", id="NUL in a file path"),
        pytest.param(WriteFile("etc/a", "x"), "is not absolute", id="relative file path"),
        pytest.param(
            WriteFile("/etc/../../x", "x"), "'..'", id="a path that climbs out of the root"
        ),
        pytest.param(WriteFile("/etc/a", "x\0"), "NUL byte", id="NUL in file content"),
        pytest.param(tool("x", creates="/a\nb"), "contains a newline", id="newline in creates"),
        pytest.param(tool("x", creates="/a\0b"), "contains a NUL byte", id="NUL in creates"),
        pytest.param(tool("a\0b"), "NUL byte", id="NUL in an argument"),
        pytest.param(
            tool("x", env={"A B": "1"}), "not a valid environment variable name", id="bad env name"
        ),
        pytest.param(tool("x", env={"A": "\0"}), "NUL byte", id="NUL in an env value"),
        pytest.param(
            Download("u", "/a\nb", NoPin()),
            "contains a newline",
            id="newline in a download path",
        ),
    ],
)
def test_what_bash_cannot_carry_is_refused_with_a_one_line_reason(action, fragment):
    with pytest.raises(ExportError) as refused:
        render_bash(source_with([step("bad", action)]))
    message = str(refused.value)
    assert fragment in message
    assert "\n" not in message and "\0" not in message
    assert message.startswith("step bad: ")
