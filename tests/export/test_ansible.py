"""The Ansible export: golden playbooks, syntax-check and ansible-lint, the module mapping,
secrets, and hostile values that must come back exactly.

Regenerate the golden files on purpose, after reviewing the change, with
``GPUWIZARD_UPDATE_GOLDEN=1 pytest tests/export/test_ansible.py``.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwizard.core.ops import Command
from gpuwizard.core.plan import StepPlan, WriteFile, secrets_in
from gpuwizard.export.ansible import render_ansible
from gpuwizard.export.ansible_steps import MARKER_DIR
from gpuwizard.export.ansible_tasks import HTTPSGET
from gpuwizard.export.source import ExportError, ExportSource
from gpuwizard.steps import build_plan
from tests.export.conftest import ALL_OPTIONS, PROFILES, check_golden, mok_source, source_for, tool

MOK_CASE = "t4-debian12-secureboot-mok"


CASES: dict[str, Any] = {
    **{p: lambda p=p: source_for(p) for p in PROFILES},
    "a100x4-ubuntu2004-fresh-all-options": lambda: source_for(
        "a100x4-ubuntu2004-fresh", ALL_OPTIONS
    ),
    MOK_CASE: mok_source,
}
"""Golden folder -> the source: every built-in profile, every option on, and a MOK secret."""


class AnsibleLoader(yaml.SafeLoader):
    """SafeLoader that also reads Ansible's ``!unsafe`` tag, as plain text."""


AnsibleLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type]


def play_of(text: str) -> dict[str, Any]:
    plays = yaml.load(text, Loader=AnsibleLoader)  # a SafeLoader subclass
    assert isinstance(plays, list) and len(plays) == 1
    play: dict[str, Any] = plays[0]
    return play


def tasks_of(text: str) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = play_of(text)["tasks"]
    return tasks


def is_bookkeeping(task: dict[str, Any]) -> bool:
    """A step's marker tasks (ansible_steps) or the host check, not one of the plan's actions."""
    if task.get("register") == "gpuwizard_host" or "ansible.builtin.assert" in task:
        return True
    copy = task.get("ansible.builtin.copy", {})
    folder = task.get("ansible.builtin.file", {}).get("path")
    return (
        "ansible.builtin.stat" in task
        or str(copy.get("dest", "")).startswith(MARKER_DIR)
        or folder == MARKER_DIR
    )


def action_tasks(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in tasks if not is_bookkeeping(t)]


def module_of(task: dict[str, Any]) -> str:
    modules = [k for k in task if k.startswith("ansible.")]
    assert len(modules) == 1, task
    return modules[0]


def write_cases(tmp_path: Path) -> list[Path]:
    files = []
    for case, make in CASES.items():
        file = tmp_path / f"{case}.yml"
        file.write_text(render_ansible(make()), encoding="utf-8")
        files.append(file)
    return files


# --------------------------------------------------------------------------- golden


@pytest.mark.parametrize("case", CASES)
def test_playbook_matches_its_golden_file(case: str) -> None:
    check_golden(case, "playbook.yml", render_ansible(CASES[case]()))


@pytest.mark.parametrize("case", CASES)
def test_playbook_loads_with_safe_load_as_one_play_for_the_group(case: str) -> None:
    play = yaml.safe_load(render_ansible(CASES[case]()))[0]
    assert play["hosts"] == "{{ gpuwizard_hosts | default('gpu_servers') }}"
    assert play["become"] is True
    assert play["vars"]["gpuwizard_plan_summary"] == list(CASES[case]().plan.summary)
    assert all(module_of(t).startswith("ansible.builtin.") for t in play["tasks"])


def test_every_golden_playbook_passes_syntax_check(tmp_path: Path) -> None:
    binary = tool("ansible-playbook")
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(
        "[gpu_servers]\ngpu-1 ansible_host=192.0.2.1\ngpu-2 ansible_host=192.0.2.2\n"
    )
    result = subprocess.run(
        [binary, "--syntax-check", "-i", str(inventory), *map(str, write_cases(tmp_path))],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")},
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.timeout(360)  # the run's own bound is 300 s (the suite's default 120 cut it first)
def test_every_golden_playbook_passes_ansible_lint_production(tmp_path: Path) -> None:
    """One ansible-lint run over all of them: it takes seconds to start."""
    binary = tool("ansible-lint")
    files = write_cases(tmp_path)
    config = tmp_path / ".ansible-lint"
    config.write_text("profile: production\noffline: true\n")  # nothing skipped, nothing warned
    result = subprocess.run(
        [binary, "--nocolor", "-c", str(config), *(f.name for f in files)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "NO_COLOR": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Profile 'production' was required, and it passed" in result.stderr + result.stdout


# ------------------------------------------------------------------------- mapping


def test_every_action_becomes_at_least_one_task() -> None:
    source = CASES["a100x4-ubuntu2004-fresh-all-options"]()
    actions = sum(len(s.actions) for s in source.plan.steps)
    assert len(tasks_of(render_ansible(source))) >= actions


def test_package_tools_map_to_modules_never_to_commands() -> None:
    for case in ("a100x4-ubuntu2004-fresh-all-options", "l40sx4-rocky9-fresh", MOK_CASE):
        for task in tasks_of(render_ansible(CASES[case]())):
            if task.get("register") == "gpuwizard_host":
                continue  # the host check only reads (tests/export/test_hostcheck.py)
            if module_of(task) == "ansible.builtin.command":
                program = Path(task["ansible.builtin.command"]["argv"][0]).name
                assert program not in (
                    "apt-get",
                    "apt-key",
                    "dpkg",
                    "apt-mark",
                    "systemctl",
                    "reboot",
                    "curl",
                )
                uv = (
                    program == "uv"
                    and task.get("changed_when") == "'Installed' in gpuwizard_uv.stderr"
                )
                assert (
                    "creates" in task["ansible.builtin.command"]
                    or task["changed_when"] is True
                    or uv
                )


def test_pins_are_the_plans() -> None:
    tasks = tasks_of(render_ansible(CASES["a100x4-ubuntu2004-fresh-all-options"]()))
    assert not [t for t in tasks if module_of(t) == "ansible.builtin.pip"], "uv installs torch"
    uv = [
        t
        for t in tasks
        if module_of(t) == "ansible.builtin.command"
        and t["ansible.builtin.command"]["argv"][:3] == ["/opt/gpuwizard/bin/uv", "pip", "install"]
    ]
    assert [t["ansible.builtin.command"]["argv"][3:] for t in uv] == [
        [  # create-env's pinned pip, by its hash
            "--python",
            "/opt/gpuwizard/envs/pytorch/bin/python",
            "--index-url",
            "https://pypi.org/simple",
            "--verify-hashes",
            "-r",
            "/var/cache/gpuwizard/pip-26.3.hashes.txt",
        ],
        [
            "--python",
            "/opt/gpuwizard/envs/pytorch/bin/python",
            "--reinstall-package",
            "torch",
            "--reinstall-package",
            "torchvision",
            "--index-url",
            "https://download.pytorch.org/whl/cu126",
            "torch==2.14.1",
            "torchvision==0.29.1",
        ],
    ]
    assert uv[0]["environment"]["UV_NO_CONFIG"] == "1"
    assert uv[0]["changed_when"] == "'Installed' in gpuwizard_uv.stderr"
    apt = [
        t
        for t in tasks
        if module_of(t) == "ansible.builtin.apt" and "name" in t["ansible.builtin.apt"]
    ]
    driver = next(
        t for t in apt if "nvidia-driver-570-server-open" in t["ansible.builtin.apt"]["name"]
    )
    assert driver["ansible.builtin.apt"]["dpkg_options"] == "force-confdef,force-confold"
    assert driver["environment"]["DEBIAN_FRONTEND"] == "noninteractive"
    holds = [
        t["ansible.builtin.dpkg_selections"]
        for t in tasks
        if module_of(t) == "ansible.builtin.dpkg_selections"
    ]
    assert {h["name"] for h in holds} == {
        "nvidia-driver-570-server-open",
        "nvidia-utils-570-server",
    }
    uv = next(get for get in downloads(tasks) if "gpuwizard_pypi" in get["argv"][4])
    assert uv["argv"][6].startswith("d7f459fe"), "the pinned SHA-256, checked by the downloader"


def downloads(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The https-only downloader's tasks: python3 -I -c HTTPSGET URL DEST [SHA256]."""
    return [
        t["ansible.builtin.command"]
        for t in tasks
        if module_of(t) == "ansible.builtin.command"
        and t["ansible.builtin.command"]["argv"][:3] == ["python3", "-I", "-c"]
        and "class HttpsOnly" in t["ansible.builtin.command"]["argv"][3]
    ]


def test_the_playbook_downloads_over_https_only_never_with_get_url() -> None:
    """get_url follows a redirect from https to plain http (ansible-core's urls.py); the
    playbook carries gpuwizard's own downloader, which refuses one (tests/runner/test_httpsget)."""
    for case, source in CASES.items():
        text = render_ansible(source())
        assert "ansible.builtin.get_url" not in text, case
        for get in downloads(tasks_of(text)):
            assert get["argv"][3] == HTTPSGET.read_text(encoding="utf-8")
            assert get["creates"], "a rerun skips a file already in place"


def test_keys_come_through_the_downloader_and_the_pinned_fingerprint_never_apt_key() -> None:
    text = render_ansible(CASES["a100x4-ubuntu2004-fresh-all-options"]())
    assert "apt-key" not in text
    tasks = tasks_of(text)
    get = next(
        get
        for get in downloads(tasks)
        if get["argv"][4] == "https://nvidia.github.io/libnvidia-container/gpgkey"
    )
    staged = "/var/cache/gpuwizard/nvidia-container-toolkit-keyring.gpg.download"
    assert get["argv"][5:] == [staged], "no SHA-256: the key check follows"
    check = next(
        t["ansible.builtin.command"]
        for t in tasks
        if module_of(t) == "ansible.builtin.command"
        and "C95B321B61E88C1809C4F759DDCAE044F796ECB0" in t["ansible.builtin.command"]["argv"]
    )
    assert check["argv"][:3] == ["python3", "-I", "-c"] and "def checked_key" in check["argv"][3]
    assert check["argv"][4:] == [staged, "C95B321B61E88C1809C4F759DDCAE044F796ECB0", "--dearmor"]
    assert check["creates"] == "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
    copied = [t["ansible.builtin.copy"] for t in tasks if module_of(t) == "ansible.builtin.copy"]
    assert {
        "src": staged,
        "dest": "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg",
        "remote_src": True,
        "mode": "0644",
    } in copied
    folder = next(
        t["ansible.builtin.file"]
        for t in tasks
        if module_of(t) == "ansible.builtin.file"
        and t["ansible.builtin.file"]["path"] == "/var/cache/gpuwizard"
    )
    assert folder["mode"] == "0700", "the download folder is root's alone"


def test_nouveau_blacklist_is_a_copy_and_reboots_are_the_reboot_module() -> None:
    tasks = tasks_of(render_ansible(source_for("h100x8-ubuntu2204-fresh")))
    copy = next(t["ansible.builtin.copy"] for t in tasks if module_of(t) == "ansible.builtin.copy")
    assert copy["dest"] == "/etc/modprobe.d/gpuwizard-blacklist-nouveau.conf"
    assert copy["mode"] == "0644" and "blacklist nouveau\n" in copy["content"]
    assert sum(module_of(t) == "ansible.builtin.reboot" for t in tasks) == 1


def test_rocky_uses_dnf_and_repo_files() -> None:
    tasks = tasks_of(render_ansible(source_for("l40sx4-rocky9-fresh")))
    dnf = [t["ansible.builtin.dnf"]["name"] for t in tasks if module_of(t) == "ansible.builtin.dnf"]
    assert ["nvidia-open"] in dnf and ["python3.12"] in dnf
    key = next(get for get in downloads(tasks) if get["argv"][4].endswith(".pub"))
    assert key["argv"][4].endswith("/rhel9/x86_64/D42D0685.pub")
    repo = next(
        t["ansible.builtin.copy"]
        for t in tasks
        if module_of(t) == "ansible.builtin.copy"
        and t["ansible.builtin.copy"]["dest"] == "/etc/yum.repos.d/cuda-rhel9-x86_64.repo"
    )
    assert "gpgcheck=1\ngpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-cuda\n" in repo["content"]


# -------------------------------------------------------------------------- secrets


def test_the_mok_password_is_prompted_for_and_never_written() -> None:
    source = CASES[MOK_CASE]()
    (secret,) = secrets_in(source.plan)
    text = render_ansible(source)
    play = yaml.safe_load(text)[0]
    (prompt,) = play["vars_prompt"]
    assert prompt == {
        "name": "mok_password",
        "prompt": secret.prompt,
        "private": True,
        "confirm": True,
        "unsafe": True,
    }
    expect = next(t for t in play["tasks"] if module_of(t) == "ansible.builtin.expect")
    assert set(expect["ansible.builtin.expect"]["responses"].values()) == {"{{ mok_password }}"}
    assert expect["no_log"] is True


def test_a_secret_canary_never_reaches_the_playbook(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wherever a password might sit (the environment the runner reads), the export ignores it."""
    canary = "Pw-c4n4ry-'\"$(touch pwned)"
    for name in ("MOK_PASSWORD", "GPUWIZARD_MOK_PASSWORD", "GPUWIZARD_SECRET_MOK_PASSWORD"):
        monkeypatch.setenv(name, canary)
    source = CASES[MOK_CASE]()
    text = render_ansible(source)
    assert canary not in text and "c4n4ry" not in text
    play = yaml.safe_load(text)[0]
    assert all("default" not in prompt for prompt in play["vars_prompt"])
    secret_replies = [
        reply
        for task in play["tasks"]
        if "ansible.builtin.expect" in task
        for reply in task["ansible.builtin.expect"]["responses"].values()
    ]
    assert secret_replies == ["{{ mok_password }}"] * 2


# --------------------------------------------------------------------- hostile values

SPECIALS = ["'", '"', " ", "$(id)", "`id`", "\n", "\t", "é", "日本", "-rf", ": ", "#", "{", "}",
            "*", "&", "!", "|", ">", "%", "@", "- ", "? ", "{{ lookup('pipe', 'id') }}", "{% raw %}",
            "{#", "yes", "null", "~", "0o644", "1e3", "\\", "\x85", "\u2028", "\ufeff"]  # fmt: skip
hostile = st.lists(
    st.one_of(st.sampled_from(SPECIALS), st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0"), max_size=6)),
    min_size=1,
    max_size=6,
).map("".join)  # fmt: skip
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
hostile_path = hostile.map(lambda s: "/" + "".join("_" if c in LINE_BREAKS else c for c in s))


def hostile_source(
    argv: list[str], env_value: str, path: str, content: str, env_path: str
) -> ExportSource:
    """The h100 plan with a step whose every user-influenced value is the given one."""
    source = source_for("h100x8-ubuntu2204-fresh")
    step = StepPlan(
        id="custom-step",
        title="A step with hostile values",
        why="property test",
        actions=(
            Command(("/usr/local/bin/tool", *argv), env={"GW_VALUE": env_value}, creates=path),
            WriteFile(path, content, mode=0o600),
        ),
    )
    selection = dataclasses.replace(
        source.selection, env=dataclasses.replace(source.selection.env, path=env_path)
    )
    plan = build_plan(selection, source.facts, (content,))  # the environment's path in every step
    plan = dataclasses.replace(plan, steps=(*plan.steps, step))
    return dataclasses.replace(source, plan=plan, selection=selection)


@settings(max_examples=80, deadline=None)
@given(
    argv=st.lists(hostile, min_size=1, max_size=4),
    env_value=hostile,
    path=hostile_path,
    content=hostile,
    env_path=hostile_path,
)
def test_hostile_values_round_trip_exactly(
    argv: list[str], env_value: str, path: str, content: str, env_path: str
) -> None:
    text = render_ansible(hostile_source(argv, env_value, path, content, env_path))
    if not any(
        m in v for v in (*argv, env_value, path, content, env_path) for m in ("{{", "{%", "{#")
    ):
        assert "!unsafe" not in text
        play = yaml.safe_load(text)[0]
    else:  # Jinja delimiters: tagged !unsafe, so Ansible takes them literally
        assert "!unsafe" in text
        play = play_of(text)
    command, copy = action_tasks(play["tasks"])[-2:]
    assert command["ansible.builtin.command"] == {
        "argv": ["/usr/local/bin/tool", *argv],
        "creates": path,
    }
    assert command["environment"] == {"GW_VALUE": env_value}
    assert copy["ansible.builtin.copy"] == {"dest": path, "content": content, "mode": "0600"}
    assert play["vars"]["gpuwizard_plan_summary"] == [content]
    uv = next(
        t["ansible.builtin.command"]["argv"]
        for t in play["tasks"]
        if t.get("ansible.builtin.command", {}).get("argv", [])[1:3] == ["pip", "install"]
    )
    assert uv[3:5] == ["--python", f"{env_path}/bin/python"]
    venv = next(
        t["ansible.builtin.command"]
        for t in play["tasks"]
        if "venv" in t.get("ansible.builtin.command", {}).get("argv", [])
    )
    assert venv["creates"] == f"{env_path}/bin/python" and venv["argv"][-1] == env_path


def test_other_ok_exit_codes_and_creates_reach_the_command_task() -> None:
    source = hostile_source(["a"], "v", "/etc/x", "c", "/opt/env")
    step = StepPlan(
        id="wait",
        title="Wait",
        why="",
        actions=(
            Command(("cloud-init", "status", "--wait"), ok_codes=(0, 2)),
            Command(("tool",), creates="/x"),
        ),
    )
    plan = dataclasses.replace(source.plan, steps=(step,))
    first, second = action_tasks(tasks_of(render_ansible(dataclasses.replace(source, plan=plan))))
    assert first["register"] == "gpuwizard_command"
    assert first["failed_when"] == "gpuwizard_command.rc not in [0, 2]"
    assert first["changed_when"] is True
    assert second["ansible.builtin.command"] == {"argv": ["tool"], "creates": "/x"}
    assert "changed_when" not in second


def test_a_second_run_skips_every_finished_step() -> None:
    """Each step's tasks run only while its marker is missing; the marker is written last."""
    tasks = tasks_of(render_ansible(source_for("h100x8-ubuntu2204-fresh")))
    assert tasks[0]["register"] == "gpuwizard_host" and "ansible.builtin.assert" in tasks[1]
    tasks = tasks[2:]  # after the host check (tests/export/test_hostcheck.py)
    # uv installs torch: no pip module, so no python3-packaging task comes first
    assert "ansible.builtin.package" not in tasks[0]
    assert tasks[0]["ansible.builtin.file"] == {
        "path": MARKER_DIR,
        "state": "directory",
        "mode": "0700",
    }
    guards = [t for t in tasks if "ansible.builtin.stat" in t]
    for guard in guards:
        start = tasks.index(guard)
        when = f"not {guard['register']}.stat.exists"
        step = []
        for task in tasks[start + 1 :]:
            if task.get("when") != when:
                break
            step.append(task)
        assert (
            step
            and str(step[-1]["ansible.builtin.copy"]["dest"])
            == guard["ansible.builtin.stat"]["path"]
        )
    assert sum(len(g) for g in guards) and len(guards) == len(
        [s for s in source_for("h100x8-ubuntu2204-fresh").plan.steps if s.actions]
    )


def test_check_mode_judges_only_what_needs_no_earlier_change() -> None:
    everything = action_tasks(tasks_of(render_ansible(source_for("h100x8-ubuntu2204-fresh"))))
    needs, tasks = (
        [t for t in everything if "when" not in t],
        [t for t in everything if "when" in t],
    )
    assert needs == [], "uv installs torch: no pip module needing python3-packaging"
    first_step = tasks[0]["when"]
    strict = [t for t in tasks if t["when"] == first_step]
    assert strict and all(
        "ignore_errors" not in t for t in strict if "ansible.builtin.apt" not in t
    )
    later = [t for t in tasks if t["when"] != first_step]
    assert all(t["ignore_errors"] == "{{ ansible_check_mode }}" for t in later)
    apt = [t for t in tasks if "ansible.builtin.apt" in t]
    assert apt and all(t["ignore_errors"] == "{{ ansible_check_mode }}" for t in apt), (
        "no python3-apt"
    )


def test_jinja_in_a_value_is_tagged_unsafe() -> None:
    text = render_ansible(
        hostile_source(["{{ lookup('pipe', 'id') }}"], "v", "/etc/x", "c", "/opt/env")
    )
    assert "!unsafe '{{ lookup(''pipe'', ''id'') }}'" in text


@pytest.mark.parametrize(
    ("argv", "path", "env_path"),
    [
        pytest.param(["a"], "/etc/x\ny", "/opt/env", id="newline in a file path"),
        pytest.param(["a"], "/etc/x\0y", "/opt/env", id="NUL in a file path"),
        pytest.param(["a\0b"], "/etc/x", "/opt/env", id="NUL in an argument"),
        pytest.param(["a"], "/etc/x", "/opt/env\r", id="carriage return in the environment path"),
    ],
)
def test_nul_or_a_line_break_in_a_path_is_refused_in_one_line(
    argv: list[str], path: str, env_path: str
) -> None:
    with pytest.raises(ExportError) as raised:
        render_ansible(hostile_source(argv, "v", path, "c", env_path))
    assert str(raised.value) and "\n" not in str(raised.value)


def test_a_playbook_full_of_hostile_values_passes_syntax_check(tmp_path: Path) -> None:
    binary = tool("ansible-playbook")
    nasty = "".join(s for s in SPECIALS if s not in LINE_BREAKS)
    text = render_ansible(
        hostile_source([nasty, "-" + nasty], nasty, "/" + nasty, nasty + "\n" + nasty, "/" + nasty)
    )
    playbook = tmp_path / "playbook.yml"
    playbook.write_text(text, encoding="utf-8")
    (tmp_path / "inventory.ini").write_text("[gpu_servers]\ngpu-1 ansible_host=192.0.2.1\n")
    result = subprocess.run(
        [binary, "--syntax-check", "-i", str(tmp_path / "inventory.ini"), str(playbook)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")},
    )
    assert result.returncode == 0, result.stdout + result.stderr
