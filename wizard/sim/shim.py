"""Stand-in for every tool a step calls, in the simulation: ``python -m gpuwizard.sim.shim TOOL ARGS``.

The runner's tool registry points every command here (sudo would reset PATH, so PATH shims would
not survive). Each call is logged to calls.jsonl with its argv, the environment that matters
(DEBIAN_FRONTEND, UCF_FORCE_CONFFOLD, NEEDRESTART_*) and whether stdin is a terminal; then the
scenario may misbehave on purpose; then the tool's simulated effect is applied to the sandbox.
The simulation never touches the real system: every path is joined to the sandbox root.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from gpuwizard.sim import effects
from gpuwizard.sim.reboot import kill_runner, reboot
from gpuwizard.sim.sandbox import SIM_ENV, STATE_ENV, Sandbox, SimState
from gpuwizard.sim.scenario import matching, parse_scenario, play

LOGGED_ENV = (
    "DEBIAN_FRONTEND",
    "UCF_FORCE_CONFFOLD",
    "NEEDRESTART_MODE",
    "NEEDRESTART_SUSPEND",
    "UV_PYTHON_INSTALL_DIR",
)
Handler = Callable[[Sandbox, SimState, list[str]], tuple[SimState, list[str], int]]


def say(lines: list[str]) -> None:
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()


def log_call(sandbox: Sandbox, tool: str, args: list[str]) -> None:
    entry = {
        "time": time.time(),
        "tool": tool,
        "argv": [tool, *args],
        "env": {k: os.environ[k] for k in LOGGED_ENV if k in os.environ},
        "cwd": str(Path.cwd()),
        "stdin_tty": sys.stdin.isatty(),
    }
    with sandbox.calls.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


def apt_get(sandbox: Sandbox, state: SimState, args: list[str]) -> tuple[SimState, list[str], int]:
    words = [
        a
        for a in args
        if not a.startswith("-")
        and "=" not in a
        and a not in ("DPkg::Lock::Timeout", "Dpkg::Options::")
    ]
    command = next((w for w in words if w in ("update", "install", "full-upgrade", "upgrade")), "")
    if state.dpkg_interrupted and command != "update":
        return (
            state,
            [
                "E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem."
            ],
            100,
        )
    if command == "install":
        names = words[words.index("install") + 1 :]
        return effects.install(sandbox, state, names, sandbox.scenario().get("dkms_fails", False))
    if command == "update":
        return (
            state,
            [
                "Hit:1 http://archive.ubuntu.com/ubuntu jammy InRelease",
                "Reading package lists... Done",
            ],
            0,
        )
    return (
        state,
        [
            "Calculating upgrade... Done",
            "0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.",
        ],
        0,
    )


def dnf(sandbox: Sandbox, state: SimState, args: list[str]) -> tuple[SimState, list[str], int]:
    words = [a for a in args if not a.startswith("-")]
    if words[:1] == ["install"]:
        return effects.install(
            sandbox, state, words[1:], sandbox.scenario().get("dkms_fails", False)
        )
    if words[:2] == ["config-manager"] or "--add-repo" in args:
        url = args[-1]
        effects.touch(sandbox, f"/etc/yum.repos.d/{url.rsplit('/', 1)[-1]}", f"# from {url}\n")
        return state, [f"Adding repo from: {url}"], 0
    return state, ["Complete!"], 0


def dpkg(sandbox: Sandbox, state: SimState, args: list[str]) -> tuple[SimState, list[str], int]:
    if "--configure" in args:
        return (
            dataclasses.replace(state, dpkg_interrupted=False),
            ["Setting up nvidia-dkms-580-server (580.95.05-0ubuntu1) ..."],
            0,
        )
    if "-i" in args:
        deb = Path(args[-1]).name
        name = deb.split("_")[0]
        return effects.install(sandbox, state, [name], False)
    return state, [], 0


def initramfs(
    sandbox: Sandbox, state: SimState, args: list[str]
) -> tuple[SimState, list[str], int]:
    blacklisted = any(
        re.search(r"^\s*blacklist\s+nouveau", path.read_text(), re.MULTILINE)
        for folder in ("/etc/modprobe.d", "/usr/lib/modprobe.d")
        for path in sandbox.path(folder).glob("*.conf")
    )
    state = dataclasses.replace(state, initramfs_blacklists_nouveau=blacklisted)
    return (
        state,
        [f"update-initramfs: Generating /boot/initrd.img-{k}" for k in effects.kernels(sandbox)]
        or args[:0],
        0,
    )


def systemctl(
    sandbox: Sandbox, state: SimState, args: list[str]
) -> tuple[SimState, list[str], int]:
    del sandbox
    if args[:1] == ["enable"]:
        units = tuple(sorted({*state.services, *args[1:]}))
        return (
            dataclasses.replace(state, services=units),
            [
                f"Created symlink /etc/systemd/system/multi-user.target.wants/{u}.service"
                for u in args[1:]
            ],
            0,
        )
    return state, [], 0


def mokutil(sandbox: Sandbox, state: SimState, args: list[str]) -> tuple[SimState, list[str], int]:
    if "--import" in args:
        first = _ask("input password: ")
        second = _ask("input password again: ")
        if first != second or not first:
            return state, ["Password doesn't match"], 1
        return dataclasses.replace(state, mok="pending"), [], 0
    del sandbox
    return state, [], 0


def _ask(prompt: str) -> str:
    import termios  # only mokutil's stand-in reads a password

    sys.stdout.write(prompt)
    sys.stdout.flush()
    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd) if sys.stdin.isatty() else None
    if old is not None:
        quiet = list(old)
        quiet[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSADRAIN, quiet)
    try:
        return sys.stdin.readline().rstrip("\n")
    finally:
        if old is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, old)
        sys.stdout.write("\n")


def dkms(sandbox: Sandbox, state: SimState, args: list[str]) -> tuple[SimState, list[str], int]:
    if args[:1] == ["generate_mok"]:
        effects.touch(
            sandbox,
            "/var/lib/dkms/mok.pub",
            "-----BEGIN CERTIFICATE-----\nsimulated\n-----END CERTIFICATE-----\n",
        )
        return (
            dataclasses.replace(state, mok="not-enrolled"),
            [
                "Signing key: /var/lib/dkms/mok.key",
                "Public certificate (MOK): /var/lib/dkms/mok.pub",
            ],
            0,
        )
    return state, [], 0


def fake_reboot(
    sandbox: Sandbox, state: SimState, args: list[str]
) -> tuple[SimState, list[str], int]:
    del state, args
    say(["Rebooting (simulated)..."])
    new = reboot(sandbox)
    state_dir = os.environ.get(STATE_ENV)
    if state_dir:
        kill_runner(Path(state_dir))
    return new, [], 0


def cloud_init(
    sandbox: Sandbox, state: SimState, args: list[str]
) -> tuple[SimState, list[str], int]:
    del sandbox
    if "--wait" in args and state.cloud_init == "running":
        return dataclasses.replace(state, cloud_init="done"), [".....", "status: done"], 0
    code = {"degraded": 2, "error": 1}.get(state.cloud_init, 0)
    return state, [f"status: {state.cloud_init}"], code


def fetch(sandbox: Sandbox, state: SimState, args: list[str]) -> tuple[SimState, list[str], int]:
    url, destination = args[0], args[1]
    effects.touch(sandbox, destination, f"simulated download of {url}\n")
    if "--member" in args:
        sandbox.path(destination).chmod(0o755)
    return state, [f"fetching {url}", f"saved {destination}"], 0


def python(
    sandbox: Sandbox, state: SimState, args: list[str], program: str
) -> tuple[SimState, list[str], int]:
    if args[:2] == ["-m", "venv"]:
        version = re.search(r"python(3\.\d+)", program)
        effects.environment(sandbox, args[-1], version.group(1) if version else "3.10")
        return state, [], 0
    env = program.rsplit("/bin/", 1)[0]
    if args[:3] == ["-m", "pip", "install"]:
        return state, effects.pip_install(sandbox, env, args[3:]), 0
    if args[:1] == ["-c"]:
        return verify(sandbox, state, env, args[2], int(args[3]))
    return state, [], 0


def verify(
    sandbox: Sandbox, state: SimState, env: str, report: str, expected: int
) -> tuple[SimState, list[str], int]:
    torch = effects.installed_torch(sandbox, env) or "not installed"
    modules = sandbox.path("/proc/modules").read_text()
    loaded = re.search(r"^nvidia ", modules, re.MULTILINE) is not None
    windows_driver = sandbox.path(
        "/usr/lib/wsl/lib/libnvidia-ml.so.1"
    ).exists()  # WSL: the driver is Windows'
    problems = (
        []
        if loaded or windows_driver
        else ["torch.cuda.is_available() is False: the driver is not loaded"]
    )
    if torch == "not installed":
        problems.append("ModuleNotFoundError: No module named 'torch'")
    boot = sandbox.path("/proc/sys/kernel/random/boot_id").read_text().strip()
    devices = [f"{i}: simulated GPU" for i in range(expected)] if not problems else []
    data = {
        "env": env,
        "torch": torch,
        "boot_id": boot,
        "ok": not problems,
        "devices": devices,
        "problems": problems,
    }
    effects.touch(sandbox, report, json.dumps(data, indent=2))
    return (
        state,
        devices
        + (
            [f"PROBLEM: {p}" for p in problems] or [f"verified: torch {torch} on {expected} GPU(s)"]
        ),
        1 if problems else 0,
    )


def other(
    sandbox: Sandbox, state: SimState, args: list[str], program: str
) -> tuple[SimState, list[str], int]:
    name = Path(program).name
    if name == "uv" and args[:2] == ["python", "install"]:
        root = os.environ.get("UV_PYTHON_INSTALL_DIR", "/opt/gpuwizard/python")
        effects.touch(sandbox, f"{root}/cpython-{args[2]}.8-linux-x86_64-gnu/bin/python{args[2]}")
        return state, [f"Installed Python {args[2]}.8"], 0
    if name == "uv" and args[:1] == ["venv"]:
        version = args[args.index("--python") + 1]
        effects.environment(sandbox, args[-1], version)
        return (
            state,
            [f"Using CPython {version}.8", f"Creating virtual environment at: {args[-1]}"],
            0,
        )
    if name == "conda" and "create" in args:
        path = args[args.index("--prefix") + 1]
        version = next(a.split("=")[1] for a in args if a.startswith("python="))
        effects.touch(sandbox, f"{path}/conda-meta/python-{version}.8-h1234_0.json", "{}")
        effects.touch(sandbox, f"{path}/bin/python")
        sandbox.path(f"{path}/lib/python{version}/site-packages").mkdir(parents=True, exist_ok=True)
        return state, ["Preparing transaction: done", "Executing transaction: done"], 0
    if name == "bash" and args[1:3] == ["-b", "-p"]:
        effects.touch(sandbox, f"{args[3]}/bin/conda")
        return state, ["PREFIX=" + args[3], "Miniforge3 installed"], 0
    if name == "apt-mark" and args[:1] == ["hold"]:
        return (
            dataclasses.replace(state, held=tuple(sorted({*state.held, *args[1:]}))),
            [f"{p} set on hold." for p in args[1:]],
            0,
        )
    if name == "nvidia-uninstall":
        for trace in ("/usr/bin/nvidia-uninstall", "/var/log/nvidia-installer.log"):
            sandbox.path(trace).unlink(missing_ok=True)
    return state, [], 0


HANDLERS: dict[str, Handler] = {
    "apt-get": apt_get, "dnf": dnf, "dpkg": dpkg, "update-initramfs": initramfs, "dracut": initramfs,
    "systemctl": systemctl, "mokutil": mokutil, "dkms": dkms, "reboot": fake_reboot, "cloud-init": cloud_init,
    "gpuwizard-fetch": fetch,
}  # fmt: skip


def main(argv: list[str]) -> int:
    sandbox = Sandbox(Path(os.environ[SIM_ENV]))
    program, args = argv[0], argv[1:]
    tool = Path(program).name
    log_call(sandbox, tool, args)
    state = sandbox.load()
    scenario = parse_scenario(sandbox.scenario())
    rule = matching(scenario, tool, args, state.counters)
    if rule is not None:
        counters = {**state.counters, rule.key: state.counters.get(rule.key, 0) + 1}
        sandbox.save(dataclasses.replace(state, counters=counters))
        code = play(rule)
        if code is not None:
            return code
        state = sandbox.load()
    if tool in HANDLERS:
        state, lines, code = HANDLERS[tool](sandbox, state, args)
    elif tool.startswith("python"):
        state, lines, code = python(sandbox, state, args, program)
    else:
        state, lines, code = other(sandbox, state, args, program)
    sandbox.save(state)
    say(lines)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
