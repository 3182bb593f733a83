"""Recorded hosts of machines that come with PyTorch already installed (issue 26).

``h200-vm-ubuntu2404-preinstalled`` is a real capture (tests/hosts/captures/h200-vm-2026-12-04,
what ``gpuwizard capture-host`` recorded on a cloud H200 microVM) with what that capture could
not yet see added on top: the preinstalled environment as the machine's notes describe it and
the clocks event reasons nvidia-smi -q printed there. The other three are written from their
vendors' documentation (cited in each profile's notes) in the format of tools/build_profiles.py:
a Deep Learning image with a conda environment, a Lambda Stack host, and a workstation whose
``pip install torch`` brought a build its driver cannot run. Imported by build_profiles.py.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from build_profiles import (  # type: ignore[import-not-found]  # a script beside this one
    NONE,
    NVIDIA_MODPROBE,
    SPEED,
    TORCH_VERSION_PY,
    Profile,
    dev_nodes,
    gpu_pci,
    metadata,
    nvml_gpus,
    nvrm_log,
)

from gpuwizard.core.facts import NvmlGpu, NvmlOk
from gpuwizard.machine.host import SAFE_PATH

CAPTURES = Path(__file__).resolve().parent.parent / "tests" / "hosts" / "captures"
TORCHVISION_VERSION_PY = "__version__ = '{version}'\ngit_version = 'unknown'\n"
TORCHAUDIO_VERSION_PY = "__version__ = '{version}'\ngit_version = 'unknown'\n"
HEALTHY_AMPERE = {
    "ecc_enabled": True,
    "ecc_uncorrected_volatile": 0,
    "ecc_uncorrected_aggregate": 0,
    "remapped_rows_correctable": 0,
    "remapped_rows_uncorrectable": 0,
    "remap_pending": False,
    "remap_failed": False,
    "clocks_event_mask": 0x1,
}
PASSWD = (
    "root:x:0:0:root:/root:/bin/bash\n"
    "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    "{user}:x:1000:1000:{gecos}:/home/{user}:/bin/bash\n"
)


def torch_files(
    site: str, torch: str, cuda: str | None, torchvision: str, torchaudio: str | None = None
) -> dict[str, str]:
    """A site folder holding torch and torchvision (and torchaudio) as pip leaves them: each
    package's version.py, which its build writes, and its dist-info folder."""
    files = {
        f"{site}/torch/version.py": TORCH_VERSION_PY.format(version=torch, cuda=cuda).replace(
            "'None'", "None"
        ),
        f"{site}/torch-{torch}.dist-info/METADATA": metadata("torch", torch),
        f"{site}/torchvision/version.py": TORCHVISION_VERSION_PY.format(version=torchvision),
        f"{site}/torchvision-{torchvision}.dist-info/METADATA": metadata(
            "torchvision", torchvision
        ),
    }
    if torchaudio:
        files[f"{site}/torchaudio/version.py"] = TORCHAUDIO_VERSION_PY.format(version=torchaudio)
        files[f"{site}/torchaudio-{torchaudio}.dist-info/METADATA"] = metadata(
            "torchaudio", torchaudio
        )
    return files


def venv_files(prefix: str, python: str) -> tuple[dict[str, str], dict[str, str]]:
    """(files, links) of a venv made by ``python3 -m venv`` with the system's Python."""
    minor = ".".join(python.split(".")[:2])
    cfg = (
        f"home = /usr/bin\ninclude-system-site-packages = false\nversion = {python}\n"
        f"executable = /usr/bin/python{minor}\ncommand = /usr/bin/python3 -m venv {prefix}\n"
    )
    site = f"{prefix}/lib/python{minor}/site-packages"
    files = {
        f"{prefix}/pyvenv.cfg": cfg,
        f"{site}/pip-24.0.dist-info/METADATA": metadata("pip", "24.0"),
    }
    links = {
        f"{prefix}/bin/python": "python3",
        f"{prefix}/bin/python3": "/usr/bin/python3",
        f"{prefix}/bin/python{minor}": "python3",
    }
    return files, links


def conda_env_files(prefix: str, python: str) -> dict[str, str]:
    """A conda environment: its conda-meta records (python's names the version) and its
    interpreter (conda links python and python3 to it; recorded here as files)."""
    minor = ".".join(python.split(".")[:2])
    return {
        f"{prefix}/conda-meta/history": "",
        f"{prefix}/conda-meta/python-{python}-h955ad1f_0.json": "{}\n",
        **{f"{prefix}/bin/{name}": "" for name in ("python", "python3", f"python{minor}")},
    }


# ------------------------------------------------------------------------- the real H200 capture
@dataclass(frozen=True)
class CaptureOverlay:
    """A real capture, and what is added to it (each addition says where it comes from)."""

    name: str
    capture: str
    description: str
    notes: str
    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    environ: dict[str, str] = field(default_factory=dict)
    nvml_gpu: dict[str, object] = field(default_factory=dict)
    """Fields set on every NVML GPU of the capture."""


H200_VENV = "/opt/torch/.venv"
_H200_VENV_FILES, _H200_VENV_LINKS = venv_files(H200_VENV, "3.12.3")
H200_VM = CaptureOverlay(
    name="h200-vm-ubuntu2404-preinstalled",
    capture="h200-vm-2026-12-04",
    description="1x H200, Ubuntu 24.04 microVM (a real capture): host-managed driver 580.159.04, "
    "torch 2.11.0+cu130 already installed",
    notes="Recorded on 2026-12-04 by gpuwizard capture-host (commit 9bd9f5e) on a cloud NVIDIA "
    "H200 microVM: Ubuntu 24.04.3, kernel 6.18.44-fc-v1252-gpu, driver 580.159.04 (open modules, "
    "CUDA 13.0) managed by the host, virtio disks vda/vdb, eth0 without a link speed, /.dockerenv, "
    "no systemd, no systemd-detect-virt, no mokutil, no cloud-init. The capture is kept as recorded "
    "in tests/hosts/captures/h200-vm-2026-12-04 (with its nvidia-smi -q and NOTES.md). Added here: "
    "(1) the preinstalled environment as the machine's notes and issue 26 describe it, which that "
    "capture-host did not yet read: a venv at /opt/torch/.venv (Python 3.12.3) with torch "
    "2.11.0+cu130 and torchvision 0.26.0, first on PATH (the session's PATH is UNCONFIRMED: written "
    "so that its python3 is the venv's, as described); (2) NVML's clocks event reasons as nvidia-smi "
    "-q printed them on the machine (Idle active, every slowdown reason not active: 0x1).",
    files={
        **_H200_VENV_FILES,
        **torch_files(
            f"{H200_VENV}/lib/python3.12/site-packages", "2.11.0+cu130", "13.0", "0.26.0"
        ),
    },
    links=_H200_VENV_LINKS,
    environ={"PATH": f"{H200_VENV}/bin:{SAFE_PATH}", "HOME": "/root"},
    nvml_gpu={"clocks_event_mask": 0x1},
)


def _writable(destination: Path) -> None:
    for path in (destination, *destination.rglob("*")):
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _load(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


def _dump(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def build_from_capture(overlay: CaptureOverlay, destination: Path) -> None:
    """The capture, copied as recorded, with the overlay's files, links, session and NVML fields."""
    if destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(
        CAPTURES / overlay.capture,
        destination,
        ignore=shutil.ignore_patterns("NOTES.md", "nvidia-smi-q.txt"),
    )
    _writable(destination)
    for path, content in overlay.files.items():
        target = destination / "root" / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    links = _load(destination / "links.json")
    assert isinstance(links, dict)
    _dump(destination / "links.json", dict(sorted({**links, **overlay.links}.items())))
    _dump(destination / "environ.json", dict(sorted(overlay.environ.items())))
    nvml = _load(destination / "nvml.json")
    assert isinstance(nvml, dict)
    nvml["gpus"] = [{**gpu, **overlay.nvml_gpu} for gpu in nvml["gpus"]]
    _dump(destination / "nvml.json", nvml)
    meta = _load(destination / "profile.json")
    assert isinstance(meta, dict)
    _dump(
        destination / "profile.json",
        {**meta, "description": overlay.description, "notes": overlay.notes},
    )


# ------------------------------------------------------------- from the vendors' documentation
DLAMI_ENV = "/opt/conda/envs/pytorch"
DLAMI_SITE = f"{DLAMI_ENV}/lib/python3.11/site-packages"
A10G = ["0000:00:1e.0"]


def dlami_conda() -> Profile:
    return Profile(
        name="a10g-ubuntu2204-dlami-conda",
        description="1x A10G (AWS g5.xlarge), Ubuntu 22.04 Deep Learning image: PyTorch in the "
        "conda environment /opt/conda/envs/pytorch",
        notes="A Deep Learning image with conda, as AWS documents its Deep Learning AMI with Conda: "
        "each framework in its own conda environment, switched with `source activate <env>` (DLAMI "
        "Developer Guide, 'Using the Deep Learning AMI with Conda', awsdocs/aws-deep-learning-amis "
        "doc_source/tutorial-conda.md; 'Deep Learning AMI with Conda', "
        "docs.amazonaws.cn/dlami/latest/devguide/overview-conda). The environment's place, "
        "/opt/conda/envs/pytorch, is the layout issue 26 names and is UNCONFIRMED by a vendor page "
        "read here (AWS's current GPU PyTorch DLAMI release notes name python_location "
        "/opt/pytorch/bin/python, a venv, which gpuwizard finds too). EBS over NVMe reports the "
        "model 'Amazon Elastic Block Store' (amazon-ec2-utils' ebsnvme-id and udev rules); the "
        "instance store's model, the ENA interface without a link speed, the versions of the "
        "driver (535, Ubuntu's packages), torch 2.3.1+cu121 and its Python 3.11 are UNCONFIRMED. "
        "gpuwizard runs under sudo from the ubuntu user: PATH is sudo's secure_path.",
        os="ubuntu22.04",
        kernel="6.8.0-1029-aws",
        headers=("6.8.0-1029-aws",),
        pci=gpu_pci(A10G, "2237", "152f", "nvidia", (SPEED["gen4"], SPEED["gen4"], 16, 16)),
        modules=("nvidia", "nvidia_modeset", "nvidia_uvm"),
        cpu=("AMD EPYC 7R32", 4),
        memory_kib=16_132_000,
        disks=(("nvme0n1", 214_748_364_800, False), ("nvme1n1", 250_000_000_000, False)),
        disk_models={
            "nvme0n1": ("", "Amazon Elastic Block Store"),
            "nvme1n1": ("", "Amazon EC2 NVMe Instance Storage"),
        },
        nics=(("ens5", "1", None, True),),
        virt=((0, "amazon\n"), NONE),
        packages=(
            ("linux-headers-6.8.0-1029-aws", "6.8.0-1029.31~22.04.1"),
            ("nvidia-driver-535-server", "535.247.01-0ubuntu0.22.04.1"),
            ("nvidia-dkms-535-server", "535.247.01-0ubuntu0.22.04.1"),
            ("nvidia-utils-535-server", "535.247.01-0ubuntu0.22.04.1"),
            ("dkms", "2.8.7-2ubuntu2.2"),
            ("docker-ce", "5:27.3.1-1~ubuntu.22.04~jammy"),
        ),
        nvml=NvmlOk(
            "535.247.01",
            "12.2",
            tuple(
                _replace(g, HEALTHY_AMPERE)
                for g in nvml_gpus(A10G, "NVIDIA A10G", 23028, (4, 4), (16, 16), True)
            ),
        ),
        kernel_log=nvrm_log("535.247.01", open_modules=False),
        python=("3.10",),
        services={"nvidia-persistenced": "enabled", "docker": "enabled"},
        environ={"PATH": SAFE_PATH, "HOME": "/root", "SUDO_USER": "ubuntu"},
        files={
            "/etc/passwd": PASSWD.format(user="ubuntu", gecos="Ubuntu"),
            "/usr/bin/nvidia-smi": "",
            "/sys/module/nvidia/version": "535.247.01\n",
            "/lib/modules/6.8.0-1029-aws/updates/dkms/nvidia.ko": "",
            "/usr/lib/modprobe.d/nvidia-kernel-common.conf": NVIDIA_MODPROBE,
            "/opt/conda/bin/conda": "",
            "/opt/conda/conda-meta/history": "",
            "/opt/conda/conda-meta/python-3.11.9-h955ad1f_0.json": "{}\n",
            **conda_env_files(DLAMI_ENV, "3.11.9"),
            **torch_files(DLAMI_SITE, "2.3.1+cu121", "12.1", "0.18.1+cu121", "2.3.1+cu121"),
            **dev_nodes(1),
        },
        free_bytes=140_000_000_000,
    )


LAMBDA_SITE = "/usr/lib/python3/dist-packages"
H100_PCIE = ["0000:07:00.0"]


def lambda_stack() -> Profile:
    return Profile(
        name="h100pcie-ubuntu2204-lambda-stack",
        description="1x H100 PCIe cloud VM, Ubuntu 22.04 with Lambda Stack: torch in "
        "/usr/lib/python3/dist-packages",
        notes="Lambda Stack as Lambda documents it: an apt repository (deb "
        "http://archive.lambdalabs.com/ubuntu jammy main, pinned at priority 1001) from which "
        "`apt-get install lambda-stack-cuda` installs the NVIDIA driver, CUDA, cuDNN and PyTorch for "
        "the system's python3, built for CUDA 12.4 on Ubuntu 22.04 (lambdal/lambda-stack-dockerfiles, "
        "Dockerfile.jammy: libcuda1-dummy 12.4, NVIDIA_REQUIRE_CUDA cuda>=12.4; lambdalabs.com/"
        'lambda-stack-deep-learning-software); its Dockerfiles test it with `python3 -c "import '
        'torch"`. Debian packages put Python modules in /usr/lib/python3/dist-packages (Debian '
        "Python Policy). The package names python3-torch-cuda and python3-torchvision-cuda, torch "
        "2.4.1 and torchvision 0.19.1 (their egg-info folders, version.py without a +cu tag), the "
        "driver 550.127.05 and the VM's virtio disk are UNCONFIRMED.",
        os="ubuntu22.04",
        kernel="5.15.0-126-generic",
        headers=("5.15.0-126-generic",),
        pci=gpu_pci(H100_PCIE, "2331", "1626", "nvidia", (SPEED["gen5"], SPEED["gen5"], 16, 16)),
        modules=("nvidia", "nvidia_modeset", "nvidia_uvm"),
        cpu=("Intel Xeon Processor (Icelake)", 26),
        memory_kib=231_000_000,
        disks=(("vda", 1_099_511_627_776, True),),
        nics=(("eth0", "1", None, True),),
        virt=((0, "kvm\n"), NONE),
        packages=(
            ("linux-headers-5.15.0-126-generic", "5.15.0-126.136"),
            ("nvidia-driver-550", "550.127.05-0lambda0.22.04.1"),
            ("nvidia-dkms-550", "550.127.05-0lambda0.22.04.1"),
            ("nvidia-utils-550", "550.127.05-0lambda0.22.04.1"),
            ("libnvidia-compute-550", "550.127.05-0lambda0.22.04.1"),
            ("dkms", "2.8.7-2ubuntu2.2"),
        ),
        nvml=NvmlOk(
            "550.127.05",
            "12.4",
            tuple(
                _replace(g, HEALTHY_AMPERE)
                for g in nvml_gpus(H100_PCIE, "NVIDIA H100 PCIe", 81559, (5, 5), (16, 16), True)
            ),
        ),
        kernel_log=nvrm_log("550.127.05", open_modules=False),
        python=("3.10",),
        services={"nvidia-persistenced": "enabled"},
        environ={"PATH": SAFE_PATH, "HOME": "/root", "SUDO_USER": "ubuntu"},
        files={
            "/etc/passwd": PASSWD.format(user="ubuntu", gecos="Ubuntu"),
            "/etc/apt/sources.list.d/lambda.list": "deb http://archive.lambdalabs.com/ubuntu jammy main\n",
            "/usr/bin/nvidia-smi": "",
            "/sys/module/nvidia/version": "550.127.05\n",
            "/lib/modules/5.15.0-126-generic/updates/dkms/nvidia.ko": "",
            "/usr/lib/modprobe.d/nvidia-kernel-common.conf": NVIDIA_MODPROBE,
            f"{LAMBDA_SITE}/torch/version.py": TORCH_VERSION_PY.format(
                version="2.4.1", cuda="12.4"
            ),
            f"{LAMBDA_SITE}/torch-2.4.1.egg-info/PKG-INFO": metadata("torch", "2.4.1"),
            f"{LAMBDA_SITE}/torchvision/version.py": TORCHVISION_VERSION_PY.format(
                version="0.19.1"
            ),
            f"{LAMBDA_SITE}/torchvision-0.19.1.egg-info/PKG-INFO": metadata(
                "torchvision", "0.19.1"
            ),
            **dev_nodes(1),
        },
        free_bytes=1_000_000_000_000,
    )


ALICE_ENV = "/home/alice/miniconda3/envs/train"


def driver570_torch_cu130() -> Profile:
    return Profile(
        name="rtx4090-ubuntu2204-driver570-torch-cu130",
        description="1x GeForce RTX 4090 workstation, Ubuntu 22.04, driver 570 and a conda "
        "environment whose `pip install torch` brought a CUDA 13.0 build the driver cannot run",
        notes="The field's most common error, as the doctor should name it: torch 2.11.0 from PyPI "
        "is the cu130 build (PyPI's default for 2.11.0 in gpuwizard's table), which needs driver 580 "
        "or newer for CUDA 13 (compat.md b.1); this workstation has Ubuntu's 570-server driver (CUDA "
        "12.8). alice runs gpuwizard herself (no sudo) with her conda environment active: CONDA_PREFIX "
        "and PATH point at ~/miniconda3/envs/train. Hand-made, like the other built-in hosts.",
        os="ubuntu22.04",
        kernel="6.8.0-60-generic",
        headers=("6.8.0-60-generic",),
        pci=gpu_pci(
            ["0000:01:00.0"], "2684", "16f4", "nvidia", (SPEED["gen4"], SPEED["gen4"], 16, 16)
        ),
        modules=("nvidia", "nvidia_drm", "nvidia_modeset", "nvidia_uvm"),
        cpu=("AMD Ryzen 9 7950X 16-Core Processor", 32),
        memory_kib=131_072_000,
        disks=(("nvme0n1", 2_000_398_934_016, False),),
        disk_models={"nvme0n1": ("", "Samsung SSD 990 PRO 2TB")},
        nics=(("enp6s0", "1", 2500, True),),
        cloud_init=(127, ""),
        packages=(
            ("linux-headers-6.8.0-60-generic", "6.8.0-60.63~22.04.1"),
            ("nvidia-driver-570-server-open", "570.133.20-0ubuntu0.22.04.1"),
            ("nvidia-dkms-570-server-open", "570.133.20-0ubuntu0.22.04.1"),
            ("nvidia-utils-570-server", "570.133.20-0ubuntu0.22.04.1"),
            ("libnvidia-compute-570-server", "570.133.20-0ubuntu0.22.04.1"),
            ("dkms", "2.8.7-2ubuntu2.2"),
        ),
        nvml=NvmlOk(
            "570.133.20",
            "12.8",
            tuple(
                _replace(g, {"clocks_event_mask": 0x1})
                for g in nvml_gpus(
                    ["0000:01:00.0"], "NVIDIA GeForce RTX 4090", 24564, (4, 4), (16, 16), False
                )
            ),
        ),
        kernel_log=nvrm_log("570.133.20", open_modules=True),
        python=("3.10",),
        services={"nvidia-persistenced": "disabled"},
        environ={
            "PATH": f"{ALICE_ENV}/bin:/home/alice/miniconda3/condabin:{SAFE_PATH}",
            "CONDA_PREFIX": ALICE_ENV,
            "HOME": "/home/alice",
        },
        files={
            "/etc/passwd": PASSWD.format(user="alice", gecos="Alice"),
            "/usr/bin/nvidia-smi": "",
            "/sys/module/nvidia/version": "570.133.20\n",
            "/lib/modules/6.8.0-60-generic/updates/dkms/nvidia.ko": "",
            "/usr/lib/modprobe.d/nvidia-kernel-common.conf": NVIDIA_MODPROBE,
            "/home/alice/miniconda3/bin/conda": "",
            "/home/alice/miniconda3/conda-meta/history": "",
            "/home/alice/miniconda3/conda-meta/python-3.12.7-h5148396_0.json": "{}\n",
            **conda_env_files(ALICE_ENV, "3.12.7"),
            **torch_files(f"{ALICE_ENV}/lib/python3.12/site-packages", "2.11.0", "13.0", "0.26.0"),
            **dev_nodes(1),
        },
    )


def _replace(gpu: NvmlGpu, changes: dict[str, object]) -> NvmlGpu:
    return dataclasses.replace(gpu, **changes)  # type: ignore[arg-type]


PROFILES: tuple[Profile, ...] = (dlami_conda(), lambda_stack(), driver570_torch_cu130())
CAPTURED: tuple[CaptureOverlay, ...] = (H200_VM,)
