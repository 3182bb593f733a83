"""Stand-in for every tool a step calls, in the simulation: ``python -m gpuwizard.sim.shim TOOL ARGS``.

The runner's tool registry points every command here (sudo would reset PATH, so PATH shims would
not survive). Each call is logged to calls.jsonl with its argv, the environment that matters
(DEBIAN_FRONTEND, UCF_FORCE_CONFFOLD, NEEDRESTART_*) and whether stdin is a terminal; then the
scenario may misbehave on purpose; then the tool's simulated effect is applied to the sandbox.
The simulation never touches the real system: every path is joined to the sandbox root.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from gpuwizard.core.ahead import AHEAD_MARK
from gpuwizard.core.isolation import ISOLATED
from gpuwizard.core.ops import APT_FETCH_TOOL
from gpuwizard.sim import effects
from gpuwizard.sim.sandbox import SIM_ENV, STATE_ENV, Sandbox, SimState
from gpuwizard.sim.scenario import Rule, matching, parse_scenario, play

LOGGED_ENV = (
    "DEBIAN_FRONTEND",
    "UCF_FORCE_CONFFOLD",
    "NEEDRESTART_MODE",
    "NEEDRESTART_SUSPEND",
    "UV_PYTHON_INSTALL_DIR",
    AHEAD_MARK,
)
Handler = Callable[[Sandbox, SimState, list[str]], tuple[SimState, list[str], int]]


def wait_for_gate(sandbox: Sandbox, rule: Rule) -> None:
    while rule.wait_for and not sandbox.path(rule.wait_for).exists():
        time.sleep(0.05)


def change_files(sandbox: Sandbox, rule: Rule) -> None:
    for path, content in rule.write_file.items():
        effects.touch(sandbox, path, content)
    for path in rule.remove_file:
        sandbox.path(path).unlink(missing_ok=True)


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


APT_CHANGES = ("install", "full-upgrade", "upgrade", "dist-upgrade", "remove", "purge")


def apt_command(args: list[str]) -> tuple[str, list[str]]:
    """apt-get's subcommand and the words after the options."""
    words = [
        a
        for a in args
        if not a.startswith("-")
        and "=" not in a
        and a not in ("DPkg::Lock::Timeout", "Dpkg::Options::")
    ]
    command = next((w for w in words if w in ("update", *APT_CHANGES)), "")
    return command, words


def changes_packages(tool: str, args: list[str]) -> bool:
    """dpkg is at work during this call, so killing it leaves dpkg interrupted (T12)."""
    if tool == "apt-get":
        return apt_command(args)[0] in APT_CHANGES
    return tool == "dpkg" and ("-i" in args or "--install" in args)


def wait_for_lock(
    sandbox: Sandbox, state: SimState, args: list[str]
) -> tuple[SimState, list[str] | None]:
    """Another package manager holds the dpkg lock (scenario ``dpkg_lock``): wait or refuse."""
    lock = sandbox.scenario().get("dpkg_lock")
    taken = state.counters.get("dpkg_lock", 0)
    if not lock or taken >= int(lock.get("calls", 1)):
        return state, None
    state = dataclasses.replace(state, counters={**state.counters, "dpkg_lock": taken + 1})
    holder = lock.get("holder", "4750 (unattended-upgr)")
    message = f"Could not get lock /var/lib/dpkg/lock-frontend. It is held by process {holder}"
    if not any(a.startswith("DPkg::Lock::Timeout=") for a in args):
        return state, [
            f"E: {message}",
            "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), "
            "is another process using it?",
        ]
    say([f"Waiting for cache lock: {message}... 0s"])
    time.sleep(float(lock.get("wait_s", 0.2)))
    return state, None


def apt_get(sandbox: Sandbox, state: SimState, args: list[str]) -> tuple[SimState, list[str], int]:
    command, words = apt_command(args)
    if command in APT_CHANGES:
        state, refused = wait_for_lock(sandbox, state, args)
        if refused is not None:
            return state, refused, 100
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
                effects.archive_hit(sandbox),
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
    if "--audit" in args or "-C" in args:
        if not state.dpkg_interrupted:
            return state, [], 0
        return (
            state,
            [
                "The following packages are only half configured, probably due to problems",
                "configuring them the first time.  The configuration should be retried using",
                "dpkg --configure <package> or the configure menu option in dselect:",
                " nvidia-dkms-580-server NVIDIA DKMS package",
            ],
            0,
        )
    if "--configure" in args:
        return (
            dataclasses.replace(state, dpkg_interrupted=False),
            [f"Setting up nvidia-dkms-580-server ({effects.DRIVER_VERSIONS['580']}-0ubuntu1) ..."],
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
        # scenario "password_echo": "off" (at once), "late" (after 0.3 s: the echo race), "on"
        echo = str(sandbox.scenario().get("password_echo", "off"))
        first = _ask("input password: ", echo)
        second = _ask("input password again: ", echo)
        if first != second or not first:
            return state, ["Password doesn't match"], 1
        # Compared now and forgotten: the sandbox keeps whether it matches, nothing derived from it.
        console = sandbox.scenario().get("mok_console_password_sha256")
        typed = hashlib.sha256(first.encode("utf-8")).hexdigest()
        matches = console is None or hmac.compare_digest(str(console), typed)
        return dataclasses.replace(state, mok="pending", mok_console_matches=matches), [], 0
    return state, [], 0


def _ask(prompt: str, echo: str) -> str:
    import termios  # only mokutil's stand-in reads a password

    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd) if sys.stdin.isatty() else None
    mode = list(old) if old is not None else None
    if mode is not None and echo != "off":
        # A terminal repeats what is typed until the program stops it (T25), from before the
        # prompt: echo goes on first, or a reply sent at the prompt meets a terminal that was
        # never echoing (a window no real terminal has).
        mode[3] |= termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    sys.stdout.write(prompt)
    sys.stdout.flush()
    if mode is not None:
        if echo == "late":
            time.sleep(0.3)
        if echo != "on":
            mode[3] &= ~termios.ECHO
            termios.tcsetattr(fd, termios.TCSADRAIN, mode)
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
    # Imported here: the fake reboot needs detection's view of the machine; the other tools,
    # started for every command of every simulated install, start faster without it.
    from gpuwizard.sim.reboot import boot_id_of, kill_runner, reboot

    del state, args
    say(["Rebooting (simulated)..."])
    ending = boot_id_of(sandbox)
    new = reboot(sandbox)
    state_dir = os.environ.get(STATE_ENV)
    if state_dir and boot_id_of(sandbox) != ending:  # a reboot that did not happen kills nothing
        kill_runner(Path(state_dir), ending)
    return new, [], 0


def cloud_init(
    sandbox: Sandbox, state: SimState, args: list[str]
) -> tuple[SimState, list[str], int]:
    if "--wait" in args and state.cloud_init == "running":
        end = str(sandbox.scenario().get("cloud_init_ends", "done"))
        code = {"degraded": 2, "error": 1}.get(end, 0)
        return dataclasses.replace(state, cloud_init=end), [".....", f"status: {end}"], code
    code = {"degraded": 2, "error": 1}.get(state.cloud_init, 0)
    return state, [f"status: {state.cloud_init}"], code


def fetch(sandbox: Sandbox, state: SimState, args: list[str]) -> tuple[SimState, list[str], int]:
    """gpuwizard-fetch: the file arrives as a stand-in; no simulated file has its pinned checksum,
    so the check is the real tool's (tests/runner), and here only its words are kept. Options the
    real tool refuses are refused here too, with its words."""
    from gpuwizard.runner.fetch import FetchError, parse

    try:
        parse(args)
    except FetchError as error:
        return state, [f"gpuwizard-fetch: {error}"], 1
    url, destination = args[0], args[1]
    effects.touch(sandbox, destination, f"simulated download of {url}\n")
    if "--member" in args:
        sandbox.path(destination).chmod(0o755)
    lines = [f"fetching {url}", f"saved {destination}"]
    if "--unpinned" in args:
        lines.append(f"gpuwizard-fetch: WARNING: {url} has no pinned checksum (UNCONFIRMED)")
    return state, lines, 0


def python(
    sandbox: Sandbox, state: SimState, args: list[str], program: str
) -> tuple[SimState, list[str], int]:
    if args[:1] != [ISOLATED]:  # the real one would import from the current folder first
        return state, [f"{program} was started without {ISOLATED}"], 2
    args = args[1:]
    if args[:2] == ["-m", "venv"]:
        found = re.search(r"python(3\.\d+)", program)
        version = found.group(1) if found else "3.10"
        system = program.startswith("/usr/bin/") and effects.uses_apt(sandbox)
        if system and f"python{version}-venv" not in state.packages:
            # Debian and Ubuntu split ensurepip off: venv stops half-way, pip missing (B3).
            effects.environment(sandbox, args[-1], version, with_pip=False)
            return state, ["The virtual environment was not created successfully because ensurepip is not",
                           "available.  On Debian/Ubuntu systems, you need to install the python3-venv",
                           "package using the following command.", "",
                           f"    apt install python{version}-venv"], 1  # fmt: skip
        effects.environment(sandbox, args[-1], version)
        return state, [], 0
    env = program.rsplit("/bin/", 1)[0]
    if args[:3] == ["-m", "pip", "install"]:
        return state, effects.pip_install(sandbox, env, args[3:]), 0
    if args[:3] == ["-m", "pip", "download"]:
        return state, effects.pip_download(sandbox, env, args[3:]), 0
    if args[:1] == ["-c"]:  # the probe: the environment it verifies is its last argument
        return verify(sandbox, state, args[4] if len(args) > 4 else env, args[2], int(args[3]))
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
    from gpuwizard.sim.machine import sim_gpus, sim_has_nvswitch  # detection code: this probe only

    if not problems and sim_has_nvswitch(sandbox) and "nvidia-fabricmanager" not in state.services:
        # An NVSwitch system's GPUs wait for the fabric, which Fabric Manager sets up (CUDA 802).
        problems.append(
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 802: system not "
            "yet initialized"
        )
    hidden = sandbox.scenario().get("boot_id_hidden")
    boot = None if hidden else sandbox.path("/proc/sys/kernel/random/boot_id").read_text().strip()
    stat = sandbox.path("/proc/stat")
    found = re.search(r"^btime (\d+)$", stat.read_text(), re.MULTILINE) if stat.exists() else None
    btime = int(found.group(1)) if found else None
    gpus = sim_gpus(sandbox)[:expected]
    devices = (
        [f"{i}: NVIDIA {g.model.name} ({g.model.sm})" for i, g in enumerate(gpus)]
        if not problems
        else []
    )
    data = {
        "env": env,
        "torch": torch,
        "boot_id": boot,
        "btime": btime,
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
    if name == "uv" and args[:2] == ["pip", "install"]:
        lines, code = effects.uv_pip_install(sandbox, args[2:])
        return state, lines, code
    if name == "uv" and args[:1] == ["venv"]:
        # --python: a version uv installed (3.12), or an interpreter's path (/usr/bin/python3.12)
        wanted = args[args.index("--python") + 1]
        found = re.search(r"(\d+\.\d+)$", wanted)
        version = found.group(1) if found else wanted
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


def modprobe(sandbox: Sandbox, state: SimState, args: list[str]) -> tuple[SimState, list[str], int]:
    # Imported here, as for the reboot: loading a module changes what detection sees.
    from gpuwizard.sim.reboot import load_now

    names = [a for a in args if not a.startswith("-")]
    error = load_now(sandbox, state, names[0] if names else "")
    return state, [error] if error else [], 1 if error else 0


HANDLERS: dict[str, Handler] = {
    "apt-get": apt_get, "dnf": dnf, "dpkg": dpkg, "update-initramfs": initramfs, "dracut": initramfs,
    "systemctl": systemctl, "mokutil": mokutil, "dkms": dkms, "reboot": fake_reboot, "cloud-init": cloud_init,
    "gpuwizard-fetch": fetch, "modprobe": modprobe,
}  # fmt: skip


def fetches_ahead(tool: str, args: list[str]) -> bool:
    """A call that only fills a cache (runner/prefetch.py): it runs beside a step's own calls.
    Every call of the fetching process is marked (AHEAD_MARK); these are the cache-only kinds."""
    return tool == APT_FETCH_TOOL or (
        tool == "uv" and args[:2] == ["pip", "install"] and "--target" in args
    )


def fetch_ahead(
    sandbox: Sandbox, state: SimState, tool: str, args: list[str]
) -> tuple[list[str], int]:
    """Fetched into a cache: nothing the machine shows changes. A scenario rule may still make
    it fail, wait at a gate or print; it never counts its calls (that would be a write of the
    state beside the step's own)."""
    rule = matching(parse_scenario(sandbox.scenario()), tool, args, state.counters, ahead=True)
    if rule is not None:
        wait_for_gate(sandbox, rule)
        code = play(rule)
        if code is not None:
            return [], code
    if tool == APT_FETCH_TOOL:
        names = [a for a in args if not a.startswith("-")]
        lines = [f"{n}_1.0_amd64.deb: 1.0 MB, SHA-256 checked against apt's index" for n in names]
        return [*lines, f"{len(names)} of {len(names)} files fetched ahead ({len(names)}.0 MB)"], 0
    return [
        "Prepared the wheels in uv's cache",
        f"Installed into {args[args.index('--target') + 1]}",
    ], 0


def ahead_call(sandbox: Sandbox, tool: str, args: list[str]) -> int:
    """A call of the fetching process, beside the steps: it never saves the machine's state, or
    it would write back what it loaded over a step's change made meanwhile (a lost update: the
    initramfs a step rebuilt, forgotten)."""
    state = sandbox.load()
    if fetches_ahead(tool, args):
        said, status = fetch_ahead(sandbox, state, tool, args)
    elif tool in HANDLERS:  # gpuwizard-fetch: a file in the download cache, no state
        _, said, status = HANDLERS[tool](sandbox, state, args)
    else:
        said, status = [f"{tool}: not a fetching-ahead command"], 1
    say(said)
    return status


def main(argv: list[str]) -> int:
    sandbox = Sandbox(Path(os.environ[SIM_ENV]))
    program, args = argv[0], argv[1:]
    tool = Path(program).name
    log_call(sandbox, tool, args)
    if os.environ.get(AHEAD_MARK) == "1":
        return ahead_call(sandbox, tool, args)
    state = sandbox.load()
    rule = matching(parse_scenario(sandbox.scenario()), tool, args, state.counters)
    busy = changes_packages(tool, args) and not state.dpkg_interrupted
    if rule is not None:
        state = dataclasses.replace(
            state, counters={**state.counters, rule.key: state.counters.get(rule.key, 0) + 1}
        )
    # Until this call ends dpkg is mid-way: a kill now leaves it interrupted, as on a real machine.
    sandbox.save(dataclasses.replace(state, dpkg_interrupted=state.dpkg_interrupted or busy))
    if rule is not None:
        wait_for_gate(sandbox, rule)
        change_files(sandbox, rule)
        code = play(rule)
        if code is not None:
            if busy:
                sandbox.save(dataclasses.replace(sandbox.load(), dpkg_interrupted=False))
            return code
        state = sandbox.load()
    if busy:
        state = dataclasses.replace(state, dpkg_interrupted=False)
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
