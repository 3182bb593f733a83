"""Stand-in torch and torchvision wheels for the heavy chroot tier: NOT PyTorch.

PyTorch's own index (download.pytorch.org) cannot be reached from here and there is no GPU, so
the plan's ``uv pip install --index-url https://download.pytorch.org/whl/cuXYZ torch==V
torchvision==W`` is served by wheels built here, in a find-links folder. uv still really runs,
offline (``UV_ENV``: it would fail on the unreachable index, where pip tried it and went on),
with the wheels create-env installs (the pinned pip) and pip's build tools (setuptools, wheel
and its packaging, from PyPI) beside the stand-ins; pip, where a plan still uses it, finds them through the root's
/etc/pip.conf. The stand-in ``torch.cuda`` answers from the chroot machine's boot (the driver loaded or not, the profile's GPUs), and every tensor
operation the verify probe makes succeeds without computing anything. The tiers report both
steps as not checked.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from gpuwizard.core.download_pins import pip_for

FIND_LINKS = "/var/cache/gpuwizard-chroot/wheels"
TORCH_INIT = '''"""Stand-in torch for gpuwizard's chroot tests: NOT PyTorch. It computes nothing."""
import json
import types

__version__ = "{version}"
float16 = "float16"
_BOOT = "/run/gpuwizard-chroot/state.json"


class _Anything:
    """Every attribute, call and operator gives another; a model trains, a matmul matches."""

    def __getattr__(self, name):
        return _Anything()

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __matmul__(self, other):
        return _Anything()


def _boot():
    with open(_BOOT, encoding="utf-8") as handle:
        return json.load(handle)


def _gpus():
    boot = _boot()
    return boot["gpus"] if "nvidia" in boot["modules"] else []


def randn(*args, **kwargs):
    return _Anything()


eye = tensor = device = randn


def allclose(*args, **kwargs):
    return True


def autocast(*args, **kwargs):
    return _Anything()


cuda = types.SimpleNamespace(
    is_available=lambda: bool(_gpus()),
    device_count=lambda: len(_gpus()),
    get_device_name=lambda i: _gpus()[i]["name"],
    get_device_capability=lambda i: tuple(int(p) for p in _gpus()[i]["capability"].split(".")),
    get_arch_list=lambda: ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
    synchronize=lambda *args: None,
)
version = types.SimpleNamespace(cuda="{cuda}")
nn = optim = amp = _Anything()
'''
VISION_INIT = '''"""Stand-in torchvision for gpuwizard's chroot tests: NOT torchvision."""
import types

__version__ = "{version}"
ops = types.SimpleNamespace(nms=lambda *args, **kwargs: None)
'''


UV_TRUST = {"UV_SYSTEM_CERTS": "1"}
"""For every uv command in a chroot machine: the root's certificate store, which holds what this
machine's network needs, as the root's pip.conf gives pip (uv's own bundled roots do not). uv
reads no configuration file under gpuwizard's UV_NO_CONFIG, so the environment is the way."""
UV_ENV = {**UV_TRUST, "UV_OFFLINE": "1", "UV_FIND_LINKS": FIND_LINKS}
"""For every uv command where a tier offers the stand-ins (the runner's tool shim, deploy.sh's
and the playbook's environment)."""
SEEDS = (f"pip=={pip_for('3.11').version}", "setuptools", "wheel", "packaging")
"""create-env's pinned pip for Debian 12's Python 3.11 (checked by its hash, which PyPI's wheel
has), and what pip installs need where a plan still uses pip."""


def add_seeds(folder: Path) -> None:
    """The wheels create-env and pip installs need, from PyPI into the find-links folder, once."""
    names = [seed.replace("==", "-") for seed in SEEDS]
    if all(any(folder.glob(f"{name}-*.whl")) for name in names):
        return
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--index-url", "https://pypi.org/simple", "--dest", str(folder), *SEEDS],
        env=env, check=True, timeout=300,
    )  # fmt: skip


def _record(entries: dict[str, bytes]) -> bytes:
    lines = []
    for name, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{name},sha256={digest},{len(data)}")
    return ("\n".join(lines) + "\n").encode()


def wheel(folder: Path, name: str, version: str, files: dict[str, str], requires: str = "") -> Path:
    dist = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += f"Requires-Dist: {requires}\n" if requires else ""
    entries = {path: text.encode() for path, text in files.items()}
    entries[f"{dist}/METADATA"] = metadata.encode()
    entries[f"{dist}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: gpuwizard-chroot\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = f"{dist}/RECORD"
    body = _record(entries) + f"{record},,\n".encode()
    target = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w") as archive:
        for path, data in {**entries, record: body}.items():
            archive.writestr(path, data)
    return target


def build(folder: Path, torch: str, vision: str, variant: str) -> list[Path]:
    """torch==``torch``+variant and torchvision==``vision``+variant, as the plan pins them."""
    folder.mkdir(parents=True, exist_ok=True)
    add_seeds(folder)
    cuda = f"{variant[2:-1]}.{variant[-1]}"
    local = f"+{variant}"
    return [
        wheel(folder, "torch", torch + local, {"torch/__init__.py": TORCH_INIT.format(version=torch + local, cuda=cuda)}),
        wheel(
            folder, "torchvision", vision + local,
            {"torchvision/__init__.py": VISION_INIT.format(version=vision + local)},
            requires=f"torch=={torch}",
        ),
    ]  # fmt: skip


PIP_CONF = "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\ndisable-pip-version-check = true\nfind-links = {links}\n"
