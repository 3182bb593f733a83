"""What the doctor reads beyond detection: the kernel log, the installed torch and nvcc, the
nvidia module's signer, /dev/nvidia*, InfiniBand ports, and from the wizard's state directory
the failed steps' logs and the latest benchmark results.

Machine reads go through the Host door and are read-only (dmesg, journalctl -k, nvcc
--version, modinfo); torch is read from its files, except that each existing environment's own
Python is asked for its arch list (isolated, started in /, and never one that someone other
than root or this user could have changed). Whatever cannot be read (no root, no recording)
becomes a line in ``Observed.unread``, never an exception, so the doctor works without root and
says what it could not see.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.paths import DEFAULT_ENV
from gpuwizard.core.torch_envs import TorchEnv
from gpuwizard.doctor.driver import next_kernel
from gpuwizard.doctor.observed import (
    ARCH_PROBE,
    ArchList,
    BatchFit,
    BenchFits,
    IbPort,
    KernelLog,
    LogText,
    Observed,
    Toolkit,
    TorchBuild,
    cuda_from_local_tag,
    cuda_from_path,
    parse_arch_probe,
    parse_cuda_version_json,
    parse_nvcc_version,
    parse_torch_version_py,
)
from gpuwizard.machine.detect.recording import UnrecordedCommand
from gpuwizard.machine.host import MISSING_TOOL, TIMED_OUT, Host, Output
from gpuwizard.runner.journal import Journal, JournalData, JournalError
from gpuwizard.runner.layout import JOURNAL

KERNEL_LOG_BYTES = 4 * 1024 * 1024
LOG_TAIL_BYTES = 256 * 1024
"""The end of a step log is where its error is; a whole apt log can run to megabytes."""


def run_quietly(host: Host, argv: Sequence[str], timeout_s: float = 10.0) -> Output:
    """The command's output; a recording without it reads as a missing tool."""
    try:
        return host.run(argv, timeout_s=timeout_s)
    except UnrecordedCommand as error:
        return Output(MISSING_TOOL, "", str(error))


def _said(out: Output) -> str:
    if out.returncode == MISSING_TOOL:
        return out.stderr.strip() or "not installed"
    last = (out.stderr.strip().splitlines() or [""])[-1]
    return last or ("no entries" if out.returncode == 0 else f"exit {out.returncode}")


def read_kernel_log(host: Host) -> tuple[KernelLog | None, str | None]:
    """This boot's kernel messages: dmesg, else journalctl -k (which the adm group may read)."""
    dmesg = run_quietly(host, ["dmesg"])
    if dmesg.returncode == 0 and dmesg.stdout.strip():
        return KernelLog("dmesg", dmesg.stdout[-KERNEL_LOG_BYTES:]), None
    journal = run_quietly(host, ["journalctl", "-k", "-b", "--no-pager", "-q"], timeout_s=30)
    if journal.returncode == 0 and journal.stdout.strip():
        return KernelLog("journalctl -k", journal.stdout[-KERNEL_LOG_BYTES:]), None
    return None, f"kernel log: dmesg: {_said(dmesg)}; journalctl -k: {_said(journal)}"


def load_journal(state_dir: Path) -> tuple[JournalData | None, str | None]:
    try:
        return Journal.load(state_dir / JOURNAL).data, None
    except JournalError as error:
        return None, None if "no journal" in str(error) else f"journal: {error}"
    except OSError as error:
        return None, f"journal: {state_dir / JOURNAL}: {error.strerror} (run as root to read it)"


def _site_packages(host: Host, facts: HostFacts, env: str) -> str | None:
    python = next((e.python for e in facts.python.environments if e.path == env), None)
    if python is None:
        python = next(
            (
                n.removeprefix("python")
                for n in host.listdir(f"{env}/lib")
                if n.startswith("python3.")
            ),
            None,
        )
    return f"{env}/lib/python{python}/site-packages" if python else None


def read_torch(host: Host, facts: HostFacts, env: str) -> tuple[TorchBuild | None, str | None]:
    """torch's version and CUDA build from torch/version.py, else its dist-info folder's name.

    An environment without torch is no reading failure: (None, None)."""
    site = _site_packages(host, facts, env)
    if site is None:
        return None, None
    version_py = f"{site}/torch/version.py"
    if (text := host.read_text(version_py, limit=64 * 1024)) and (
        parsed := parse_torch_version_py(text)
    ):
        return TorchBuild(env, parsed[0], parsed[1], version_py), None
    for name in host.listdir(site):
        if name.startswith("torch-") and name.endswith(".dist-info"):
            version = name.removeprefix("torch-").removesuffix(".dist-info")
            cuda = cuda_from_local_tag(version)
            known = cuda is not None or version.endswith("+cpu")
            return TorchBuild(env, version, cuda, f"{site}/{name}", known), None
    return None, None


def _toolkit_version(host: Host, nvcc: str) -> str | None:
    out = run_quietly(host, [nvcc, "--version"])
    if out.returncode == 0 and (version := parse_nvcc_version(out.stdout)):
        return version
    root = nvcc.removesuffix("/bin/nvcc")
    text = host.read_text(f"{root}/version.json", limit=64 * 1024)
    return (parse_cuda_version_json(text) if text else None) or cuda_from_path(nvcc)


def read_toolkit(host: Host, facts: HostFacts) -> Toolkit | None:
    """The nvcc a build would use: /usr/local/cuda's, else the newest toolkit's, else the distro's."""
    toolkits = [f"/usr/local/cuda-{v}/bin/nvcc" for v in reversed(facts.installs.cuda_toolkits)]
    for path in ("/usr/local/cuda/bin/nvcc", *toolkits, "/usr/bin/nvcc"):
        if host.exists(path) and (version := _toolkit_version(host, path)):
            return Toolkit(path, version)
    return None


def read_module_signer(host: Host, facts: HostFacts) -> str | None:
    """Who signed the nvidia module of the kernel that boots next; asked only under Secure Boot."""
    kernel = next_kernel(facts)
    if facts.boot.secure_boot != "enabled" or kernel not in facts.installs.nvidia_module_kernels:
        return None
    out = run_quietly(host, ["modinfo", "-k", kernel, "-F", "signer", "nvidia"])
    return out.stdout.strip() if out.returncode == 0 else None


def read_infiniband(host: Host) -> tuple[IbPort, ...]:
    """Each RDMA port's state, rate and link layer, as /sys/class/infiniband shows them."""

    def read(base: str, name: str) -> str:
        return (host.read_text(f"{base}/{name}") or "").strip()

    ports = []
    for device in host.listdir("/sys/class/infiniband"):
        for port in host.listdir(f"/sys/class/infiniband/{device}/ports"):
            base = f"/sys/class/infiniband/{device}/ports/{port}"
            state, rate, layer = (read(base, n) for n in ("state", "rate", "link_layer"))
            ports.append(IbPort(device, port, state, rate, layer))
    return tuple(ports)


def _fits(data: dict[str, object]) -> tuple[BatchFit, ...]:
    rows = data.get("results")
    fits = []
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict):
            fits.append(
                BatchFit(
                    str(row.get("mode")),
                    int(row.get("world_size", 1)),
                    int(row.get("batch_size", 0)),
                    int(row.get("memory_mib", 0)),
                )
            )
    return tuple(fits)


def read_bench(state_dirs: Sequence[Path]) -> tuple[BenchFits | None, str | None]:
    """The latest benchmark's batch sizes (<state>/bench/<stamp>/results.json)."""
    try:
        found = [run for d in state_dirs for run in (d / "bench").glob("*/results.json")]
        runs = sorted(found, key=lambda path: path.parent.name, reverse=True)
        if not runs:
            return None, None
        data = json.loads(runs[0].read_text(encoding="utf-8"))
        environment = data.get("environment") or {}
        fits = BenchFits(
            str(runs[0]),
            str(data.get("gpu", "GPU")),
            str(environment.get("model", "the benchmark model")),
            int(environment.get("image_size", 224)),
            _fits(data),
        )
    except (OSError, ValueError, TypeError, AttributeError) as error:
        return None, f"benchmark: {error}"
    return (fits if fits.fits else None), None


def tail_text(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    with path.open("rb") as handle:
        size = path.stat().st_size
        handle.seek(max(0, size - limit))
        return handle.read().decode("utf-8", "replace")


def read_step_logs(
    state_dir: Path, journal: JournalData | None
) -> tuple[tuple[LogText, ...], list[str]]:
    """The logs of the steps that failed in the last run (their reason when the log is gone)."""
    if journal is None:
        return (), []
    logs, unread = [], []
    for record in journal.steps:
        if record.state != "failed":
            continue
        path = state_dir / "logs" / journal.run_id / f"{record.id}.log"
        label = f"failed step {record.id} ({journal.run_id})"
        try:
            logs.append(LogText(label, str(path), tail_text(path) + "\n" + record.reason))
        except OSError as error:
            logs.append(LogText(label, str(path), record.reason))
            unread.append(f"step log: {path}: {error.strerror}")
    return tuple(logs), unread


ARCH_PROBE_TIMEOUT_S = 120
"""Importing torch took 5-6 s on a 16-CPU server and 19 s on two busy CPUs: generous."""
ARCH_PROBES_MAX = 3
"""Environments whose Python the doctor runs, the first found first (each imports torch)."""


def probe_argv(env: TorchEnv) -> list[str]:
    """The environment's own Python, isolated (-I: no PYTHON* variables, no user site, no
    current folder on sys.path); the runner starts it in /."""
    return [env.python, "-I", "-c", ARCH_PROBE]


def untrusted_part(host: Host, env: TorchEnv) -> str | None:
    """The first part of the environment someone else could have changed (root running a user's
    torch would run that user's code as root)."""
    parts = (env.python, env.site, f"{env.site}/torch")
    return next((part for part in parts if host.foreign(part)), None)


def read_arch_lists(host: Host, facts: HostFacts) -> tuple[ArchList, ...]:
    """Each existing environment's own arch list, asked of its torch (a few seconds each, run
    side by side); one the doctor may not run says why."""
    if not facts.hardware.gpus:
        return ()
    lists: list[ArchList] = []
    envs = facts.python.torch_envs[:ARCH_PROBES_MAX]
    runnable = [e for e in envs if untrusted_part(host, e) is None]
    with host.probing([probe_argv(e) for e in runnable]) as probed:
        for env in envs:
            if (part := untrusted_part(host, env)) is not None:
                lists.append(ArchList(env.python, None, f"not run: {part} is not root's or yours"))
                continue
            out = run_quietly(probed, probe_argv(env), timeout_s=ARCH_PROBE_TIMEOUT_S)
            flags = parse_arch_probe(out.stdout) if out.returncode == 0 else None
            lists.append(
                ArchList(env.python, flags, None if flags is not None else _probe_why(out))
            )
    return tuple(lists)


def _probe_why(out: Output) -> str:
    if out.returncode == MISSING_TOOL:
        return "not run: its Python could not be started"
    if out.returncode == TIMED_OUT:
        return f"not answered within {ARCH_PROBE_TIMEOUT_S} s"
    return f"its Python said nothing usable: {_said(out)}"


def existing_torch(facts: HostFacts) -> TorchBuild | None:
    """The torch of the first environment detection found (the session's python3 first)."""
    env = next(iter(facts.python.torch_envs), None)
    if env is None:
        return None
    source = f"{env.site}/torch/version.py" if env.build_known else f"{env.site}/torch"
    return TorchBuild(env.path, env.torch, env.torch_cuda, source, env.build_known)


def read_observed(
    host: Host,
    facts: HostFacts,
    state_dir: Path,
    named_logs: Sequence[LogText] = (),
    env: str | None = None,
    bench_dirs: Sequence[Path] = (),
) -> Observed:
    journal, journal_why = load_journal(state_dir)
    named = env is not None or journal is not None
    env = env or (journal.selection.env.path if journal else DEFAULT_ENV)
    kernel_log, kernel_why = read_kernel_log(host)
    torch, torch_why = read_torch(host, facts, env)
    if torch is None and not named and (found := existing_torch(facts)) is not None:
        torch, env = found, found.env  # no wizard's environment: the person's own torch
    bench, bench_why = read_bench((state_dir, *bench_dirs))
    step_logs, logs_unread = read_step_logs(state_dir, journal)
    unread = [why for why in (kernel_why, torch_why, journal_why, bench_why) if why]
    return Observed(
        env=env,
        torch=torch,
        toolkit=read_toolkit(host, facts),
        kernel_log=kernel_log,
        module_signer=read_module_signer(host, facts),
        dev_nodes=tuple(n for n in host.listdir("/dev") if n.startswith("nvidia")),
        infiniband=read_infiniband(host),
        bench=bench,
        logs=(*step_logs, *named_logs),
        unread=(*unread, *logs_unread),
        reboot_pending=pending_reboot(journal, facts.boot.boot_id),
        arch_lists=read_arch_lists(host, facts),
        left=journal.left if journal else None,
    )


def pending_reboot(journal: JournalData | None, boot_id: str | None) -> str | None:
    """The reason of the reboot the journal waits for, while this is still the boot it was
    asked in (the boot id it recorded)."""
    if journal is None or journal.reboot is None or boot_id is None:
        return None
    if journal.reboot.boot_id_before != boot_id:
        return None
    return journal.record(journal.reboot.step).reason or "a step asked for it"
