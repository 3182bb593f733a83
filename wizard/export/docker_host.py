"""docker-host.md: what the host needs to build and run the exported image, as Markdown."""

from __future__ import annotations

import re

from gpuwizard.export.docker_base import BaseImage, base_image
from gpuwizard.export.dockerfile import USER_ID, USER_NAME, WORKDIR, host_steps
from gpuwizard.export.source import ExportSource
from gpuwizard.export.words import check_path, one_line
from gpuwizard.recommend.table import load_table

_TOOLKIT_APT = """\
curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey \\
  | sudo gpg --dearmor -o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg
curl -fsSL https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list \\
  | sed 's#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#g' \\
  | sudo tee /etc/apt/sources.list.d/nvidia-container-toolkit.list
sudo apt-get update && sudo apt-get install -y docker.io nvidia-container-toolkit
sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker"""
_TOOLKIT_DNF = """\
sudo dnf install -y dnf-plugins-core
sudo dnf config-manager --add-repo https://download.docker.com/linux/rhel/docker-ce.repo
curl -fsSL https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo \\
  | sudo tee /etc/yum.repos.d/nvidia-container-toolkit.repo
sudo dnf install -y docker-ce docker-ce-cli containerd.io nvidia-container-toolkit
sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl enable --now docker"""


def image_tag(source: ExportSource) -> str:
    """A docker tag from the torch pins: [A-Za-z0-9_.-], not starting with '.' or '-'."""
    t = source.selection.torch
    tag = re.sub(r"[^A-Za-z0-9_.-]", "-", f"{t.version}-{t.variant}").lstrip(".-")[:120]
    return f"gpuwizard-pytorch:{tag or 'latest-export'}"


def _driver_note(source: ExportSource, base: BaseImage) -> str:
    d = source.selection.driver
    if source.selection.wsl:
        return "**The Windows NVIDIA driver** (under WSL the driver is Windows'; nothing to install here)."
    what = f"R{d.branch} ({d.version}, {d.flavor or 'installed'} kernel modules)"
    done = (
        "the plan keeps it as installed."
        if d.action == "keep"
        else "the plan installs it (`install-nvidia-driver`), then reboots."
    )
    return (
        f"**The NVIDIA driver {what}**: {done} It runs CUDA {base.cuda_limit}, the image's CUDA; "
        "a host whose driver is older is normally refused when the container starts "
        f'("unsatisfied condition: cuda>={base.cuda_limit}").'
    )


def _toolkit_note(source: ExportSource) -> list[str]:
    ids = {s.id for s in source.plan.steps}
    if {"install-docker", "install-container-toolkit"} <= ids:
        return [
            "2. **Docker and the NVIDIA Container Toolkit**: the plan sets them up "
            "(`install-docker`, `install-container-toolkit`; Docker's daemon.json gets the nvidia "
            "runtime merged in, every other setting kept).",
        ]
    commands = _TOOLKIT_DNF if source.selection.family == "rhel" else _TOOLKIT_APT
    return [
        "2. **Docker and the NVIDIA Container Toolkit**: the plan does not set them up (choose the "
        "Docker option in gpuwizard to have it done, with daemon.json merged instead of rewritten). "
        "By hand, as NVIDIA's install guide does:",
        "",
        "   ```sh",
        *(f"   {line}" for line in commands.splitlines()),
        "   ```",
    ]


def render_docker_host_notes(source: ExportSource) -> str:
    """What the host needs to build and run the exported image, as Markdown.

    Raises:
        ExportError: as ``render_dockerfile`` (the same base image and paths).
    """
    base = base_image(source, load_table())
    env_path = check_path(source.selection.env.path, "environment path")
    tag = image_tag(source)
    host = [f"   - `{one_line(s)}`" for s in host_steps(source.plan.steps)]
    lines = [
        "# Running the exported PyTorch image",
        "",
        f"Exported by gpuwizard {one_line(source.version)} beside the `Dockerfile`, from the plan "
        f"made on: {one_line(source.machine)}. Base image: `{base.image}`"
        + ("" if base.confirmed else " (tag UNCONFIRMED: check it with `docker manifest inspect`)")
        + ".",
        "",
        "## What the host needs",
        "",
        f"1. {one_line(_driver_note(source, base))}",
        *_toolkit_note(source),
        "3. The rest of the plan's host-only steps"
        + (":" if host else ": none left on the source machine."),
        *host,
        "",
        "## Build and run",
        "",
        "```sh",
        f"docker build -t {tag} .",
        f"docker run --gpus all --rm {tag}",
        f'docker run --gpus all --rm -v "$PWD":{WORKDIR} {tag} python train.py',
        "```",
        "",
        "The first run prints the torch version, its CUDA and every GPU it sees, with a matmul on "
        "each, and exits non-zero when no GPU is visible. The second runs your own code from the "
        f"current folder, in the environment at `{one_line(env_path)}`, as user {USER_NAME} "
        f"(uid {USER_ID}).",
    ]
    return "\n".join(lines) + "\n"
