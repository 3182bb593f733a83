"""What the doctor reads beyond detection, as frozen data, and the pure parsers that make it.

``wizard/doctor/readings.py`` fills an ``Observed`` through the Host door; the checks read only
this and ``HostFacts``, so every check is a function of data and is tested with tables. Versions
stay strings. Nothing here reads the machine.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from gpuwizard.core.torch_envs import cuda_of_local_tag, parse_version_py

_NVCC = re.compile(r"release ([0-9]+\.[0-9]+), V([0-9]+(?:\.[0-9]+)*)")
_NVCC_JSON = re.compile(r'"cuda_nvcc"\s*:\s*\{[^}]*"version"\s*:\s*"([0-9]+(?:\.[0-9]+)*)"')
_CUDA_DIR = re.compile(r"/cuda-([0-9]+\.[0-9]+)(?:/|$)")


@dataclass(frozen=True)
class TorchBuild:
    env: str
    """The environment it was read from, e.g. /opt/gpuwizard/envs/pytorch."""
    version: str
    """As installed, with any local tag: "2.14.1+cu130"."""
    cuda: str | None
    """torch.version.cuda ("13.0"); None for a CPU build, or when ``build_known`` is False."""
    source: str
    """The file it was read from."""
    build_known: bool = True
    """False when only a dist-info name without a +cuXYZ tag was found: the build is unknown."""

    @property
    def release(self) -> str:
        """ "2.14.1+cu130" -> "2.14.1"."""
        return self.version.split("+", 1)[0]

    @property
    def variant(self) -> str | None:
        """The wheel's CUDA variant: "cu130" for CUDA 13.0; None for a CPU build."""
        return f"cu{self.cuda.replace('.', '')}" if self.cuda else None


@dataclass(frozen=True)
class Toolkit:
    path: str
    """The nvcc that was found."""
    version: str
    """major.minor, e.g. "12.8"."""


@dataclass(frozen=True)
class KernelLog:
    source: str
    """"dmesg" or "journalctl -k"."""
    text: str


@dataclass(frozen=True)
class IbPort:
    device: str
    """The HCA, e.g. "mlx5_0"."""
    port: str
    state: str
    """As sysfs prints it, e.g. "4: ACTIVE"."""
    rate: str
    """e.g. "400 Gb/sec (4X NDR)"."""
    link_layer: str
    """ "InfiniBand", or "Ethernet" for RoCE."""

    @property
    def active(self) -> bool:
        return self.state.endswith("ACTIVE")


@dataclass(frozen=True)
class BatchFit:
    mode: str
    """Benchmark mode: fp32, tf32, amp-fp16, amp-bf16."""
    gpus: int
    batch_size: int
    """Per GPU: the largest batch the benchmark found to fit."""
    memory_mib: int


@dataclass(frozen=True)
class BenchFits:
    path: str
    """The results.json they come from."""
    gpu: str
    model: str
    image_size: int
    fits: tuple[BatchFit, ...]


@dataclass(frozen=True)
class LogText:
    label: str
    """What the log is, for a person: "step install-nvidia-driver (run-1a2b3c4d)"."""
    path: str
    text: str


@dataclass(frozen=True)
class ArchList:
    """The CUDA architectures an environment's own torch was built with, as it said when asked
    (``python -I -c ...``: torch.cuda.get_arch_list()'s source, which needs no GPU)."""

    python: str
    flags: tuple[str, ...] | None
    """ "sm_75 sm_80 ... compute_120" split; () for a CPU build; None when it was not asked or
    did not answer (``why`` says which)."""
    why: str | None = None


ARCH_PROBE = (
    "import json, torch\n"
    "flags = getattr(torch._C, '_cuda_getArchFlags', None)\n"
    "print(json.dumps({'torch': torch.__version__, 'arch': (flags() or '').split() if flags else []}))\n"
)
"""What the doctor runs in an environment's Python: no GPU is needed for the compiled arch list."""
_ARCH_FLAG = re.compile(r"^(sm|compute)_[0-9]{1,3}[a-z]?$")


def parse_arch_probe(text: str) -> tuple[str, ...] | None:
    """The arch list from the probe's last line of output; None when it printed no such line."""
    lines = text.strip().splitlines()
    try:
        data = json.loads(lines[-1][: 64 * 1024]) if lines else None
    except ValueError:
        return None
    flags = data.get("arch") if isinstance(data, dict) else None
    if not isinstance(flags, list) or len(flags) > 64:
        return None
    return tuple(f for f in flags if isinstance(f, str) and _ARCH_FLAG.match(f))


@dataclass(frozen=True)
class Observed:
    env: str
    """The Python environment the wizard set up (or would set up)."""
    torch: TorchBuild | None = None
    toolkit: Toolkit | None = None
    kernel_log: KernelLog | None = None
    module_signer: str | None = None
    """Signer of the nvidia module for the kernel that boots next ("" when unsigned); None
    when it was not asked (Secure Boot off, no module) or could not be read."""
    dev_nodes: tuple[str, ...] = ()
    """Names under /dev that start with "nvidia"."""
    infiniband: tuple[IbPort, ...] = ()
    bench: BenchFits | None = None
    logs: tuple[LogText, ...] = ()
    """Failed steps' logs and logs named with --log: the known errors are looked for in them."""
    unread: tuple[str, ...] = ()
    """What could not be read, in words; the checks say "could not check" where it mattered."""
    reboot_pending: str | None = None
    """Why the wizard's run waits for a reboot that has not happened yet (this boot is the one
    the journal recorded), or None."""
    arch_lists: tuple[ArchList, ...] = ()
    """What each existing environment's torch said of its architectures, by its interpreter."""
    left: tuple[str, ...] | None = None
    """The titles of the steps the person skipped in the wizard's run (None: no run here)."""

    def arch_list(self, python: str) -> ArchList | None:
        return next((a for a in self.arch_lists if a.python == python), None)

    def why_unread(self, what: str) -> str | None:
        """The reason a reading (named by its prefix, e.g. "kernel log") is missing."""
        return next((line for line in self.unread if line.startswith(what)), None)


def parse_torch_version_py(text: str) -> tuple[str, str | None] | None:
    """(version, cuda) from torch/version.py; None when it is not one."""
    return parse_version_py(text)


def cuda_from_local_tag(version: str) -> str | None:
    """ "2.14.1+cu130" -> "13.0"; None without a CUDA tag (PyPI's default wheels have none)."""
    return cuda_of_local_tag(version)


def parse_nvcc_version(text: str) -> str | None:
    """ "Cuda compilation tools, release 12.8, V12.8.93" -> "12.8"."""
    found = _NVCC.search(text)
    return found.group(1) if found else None


def parse_cuda_version_json(text: str) -> str | None:
    """The toolkit's version.json names nvcc's version: "12.8.93" -> "12.8"."""
    found = _NVCC_JSON.search(text)
    return ".".join(found.group(1).split(".")[:2]) if found else None


def cuda_from_path(path: str) -> str | None:
    """ "/usr/local/cuda-12.8/bin/nvcc" -> "12.8"."""
    found = _CUDA_DIR.search(path)
    return found.group(1) if found else None
