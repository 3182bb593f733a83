#!/usr/bin/python3
"""Stand-ins, inside a chroot machine's root, for what a chroot cannot have: a boot, firmware
and a GPU. Installed as /usr/local/sbin/{modprobe,reboot,shutdown,mokutil} and
/usr/local/bin/nvidia-smi, ahead of the real tools on PATH, so the plan's own commands, deploy.sh
and the Ansible playbook all reach them the same way; everything they do not stand in for goes
to the real tool.

The boot is a JSON file, /run/gpuwizard-chroot/state.json (the machine's boot folder, bind-mounted
into the root for every command): boot_id, running kernel, loaded modules, driver version,
Secure Boot, MOK. ``modprobe nvidia`` loads the driver only where a real built module for the
running kernel is on disk (resolved by the real kmod, Debian's install rules included), nouveau
does not hold the GPU and Secure Boot accepts the module; ``reboot`` starts the newest kernel on
disk with what its modules and initramfs allow. Nothing here touches the host: the root is a
chroot, and the module is never really loaded.

Runs under the root's own python3 (3.11 on Debian 12): standard library only.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

STATE_DIR = Path("/run/gpuwizard-chroot")
STATE = STATE_DIR / "state.json"
NVIDIA_KO = re.compile(
    r"^nvidia(-(current|tesla-\d+|legacy-[0-9a-z]+))?(-open)?\.ko(\.xz|\.zst|\.gz)?$"
)
NOUVEAU_KO = re.compile(r"^nouveau\.ko(\.xz|\.zst|\.gz)?$")
MODULE_DIRS = ("updates/dkms", "extra", "updates")
NVIDIA_MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem")
REAL = {"modprobe": "/usr/sbin/modprobe", "modinfo": "/usr/sbin/modinfo"}


def load():
    return json.loads(STATE.read_text(encoding="utf-8"))


def save(state):
    tmp = STATE.with_name("state.json.tmp")
    tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
    tmp.replace(STATE)


def say(*lines):
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()


def module_file(kernel):
    """The driver's core module built for ``kernel``, under any distribution's name."""
    base = Path("/lib/modules") / kernel
    folders = [base / d for d in MODULE_DIRS]
    if (base / "kernel").is_dir():
        folders += [d for d in (base / "kernel").iterdir() if d.name.startswith("nvidia")]
    for folder in folders:
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if NVIDIA_KO.match(path.name):
                    return str(path)
    return None


def has_nouveau(kernel):
    drivers = Path("/lib/modules") / kernel / "kernel" / "drivers" / "gpu"
    return drivers.is_dir() and any(NOUVEAU_KO.match(p.name) for p in drivers.rglob("nouveau.ko*"))


def module_version(path):
    done = subprocess.run(
        [REAL["modinfo"], "-F", "version", path], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or None


def refusal(state, kernel, name):
    """Why the driver cannot be loaded into ``kernel`` now, as modprobe would say it."""
    path = module_file(kernel)
    if path is None:
        return f"modprobe: FATAL: Module {name} not found in directory /lib/modules/{kernel}"
    resolved = subprocess.run(
        [REAL["modprobe"], "--dry-run", "--show-depends", "--set-version", kernel, "nvidia"],
        capture_output=True,
        text=True,
    )
    if resolved.returncode != 0:
        return resolved.stderr.strip() or "modprobe: FATAL: Module nvidia not found"
    if "nouveau" in state["modules"]:
        return "modprobe: ERROR: could not insert 'nvidia': No such device"
    if state["secure_boot"] == "enabled" and state.get("mok") != "enrolled":
        return "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service"
    return ""


def modprobe(args):
    names = [a for a in args if not a.startswith("-")]
    options = [a for a in args if a.startswith("-")]
    wanted = [n.replace("-", "_") for n in names]
    if (
        not names
        or set(options) - {"-v", "--verbose", "-q", "--quiet"}
        or not set(wanted) <= set(NVIDIA_MODULES)
    ):
        os.execv(REAL["modprobe"], [REAL["modprobe"], *args])
    state = load()
    why = refusal(state, state["kernel"], names[0])
    if why:
        say(why)
        return 1
    for name in ["nvidia", *wanted]:
        if name not in state["modules"]:
            state["modules"].append(name)
    state["nvidia_version"] = module_version(module_file(state["kernel"]))
    save(state)
    return 0


def newest_kernel():
    kernels = [p.name[len("vmlinuz-") :] for p in Path("/boot").glob("vmlinuz-*")]
    key = lambda k: [int(p) if p.isdigit() else -1 for p in re.split(r"[.\-+_~]", k)]  # noqa: E731
    return max(kernels, key=key) if kernels else None


def blacklisted_in_initramfs(kernel):
    """An initramfs built while a modprobe.d file blacklisted nouveau carries that file."""
    listed = subprocess.run(
        ["lsinitramfs", "/boot/initrd.img-" + kernel], capture_output=True, text=True, check=False
    ).stdout.splitlines()
    for entry in listed:
        if re.match(r"^(usr/)?(etc|lib)/modprobe\.d/.+\.conf$", entry):
            try:
                text = (Path("/") / entry).read_text(encoding="utf-8")
            except OSError:
                continue
            if re.search(r"^\s*blacklist\s+nouveau\s*$", text, re.M):
                return True
    return False


def boot_modules(state, kernel):
    modules = [m for m in state["base_modules"] if m != "nouveau"]
    nouveau = state["nouveau_at_boot"] and has_nouveau(kernel)
    if nouveau and not blacklisted_in_initramfs(kernel):
        modules.append("nouveau")
    return modules


def reboot(args):
    del args
    state = load()
    if state.get("mok") == "pending":
        typed = state.get("console_password_sha256", state.get("mok_password_sha256"))
        state["mok"] = "enrolled" if typed == state.get("mok_password_sha256") else "not-enrolled"
    kernel = newest_kernel() or state["kernel"]
    state.update(boot_id=str(uuid.uuid4()), kernel=kernel, reboots=state["reboots"] + 1)
    state["modules"] = boot_modules(state, kernel)
    state["nvidia_version"] = None
    if not refusal(state, kernel, "nvidia"):
        state["modules"] += ["nvidia", "nvidia_uvm", "nvidia_modeset"]
        state["nvidia_version"] = module_version(module_file(kernel))
    for name, value in (("boot_id", state["boot_id"]), ("osrelease", kernel)):
        (STATE_DIR / name).write_text(value + "\n", encoding="ascii")
    save(state)
    for entry in Path("/run").iterdir():  # a boot starts with an empty /run (a tmpfs)
        if entry != STATE_DIR:
            subprocess.run(["rm", "-rf", "--one-file-system", str(entry)], check=False)
    say(f"Rebooting (chroot stand-in): boot {state['boot_id']}, kernel {kernel}")
    return 0


def nvidia_smi(args):
    state = load()
    if "nvidia" not in state["modules"]:
        say(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running."
        )
        return 9
    gpus = state["gpus"]
    if "-L" in args:
        say(*(f"GPU {i}: {g['name']} (UUID: GPU-{g['pci']})" for i, g in enumerate(gpus)))
        return 0
    say(f"Driver Version: {state['nvidia_version']}", *(g["name"] for g in gpus))
    return 0


MOK_ANSWERS = {
    "enrolled": "/var/lib/dkms/mok.pub is already enrolled",
    "pending": "/var/lib/dkms/mok.pub is already in the enrollment request",
    "not-enrolled": "/var/lib/dkms/mok.pub is not enrolled",
}


def ask(prompt):
    sys.stdout.write(prompt)
    sys.stdout.flush()
    return sys.stdin.readline().rstrip("\n")


def mokutil(args):
    state = load()
    secure = state["secure_boot"]
    if secure == "unsupported":
        say("EFI variables are not supported on this system")
        return 255
    if "--sb-state" in args:
        say("SecureBoot enabled" if secure == "enabled" else "SecureBoot disabled")
        return 0
    if "--test-key" in args:
        say(MOK_ANSWERS.get(state.get("mok", "not-enrolled"), MOK_ANSWERS["not-enrolled"]))
        return 0
    if "--import" in args:
        first, second = ask("input password: "), ask("input password again: ")
        if not first or first != second:
            say("Password doesn't match")
            return 1
        state.update(mok="pending", mok_password_sha256=hashlib.sha256(first.encode()).hexdigest())
        save(state)
        return 0
    say("mokutil (chroot stand-in): unsupported arguments: " + " ".join(args))
    return 2


TOOLS = {
    "modprobe": modprobe,
    "reboot": reboot,
    "shutdown": reboot,
    "nvidia-smi": nvidia_smi,
    "mokutil": mokutil,
}


if __name__ == "__main__":
    sys.exit(TOOLS[Path(sys.argv[0]).name](sys.argv[1:]))
