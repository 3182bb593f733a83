"""The export formats by name: which files each writes, with what mode, rendered by whom.

``render(source, name)`` is what the CLI and the Export screen call; an export that cannot be
made for this plan (cloud-init for a plan that needs a person at the console) raises
ExportError with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from gpuwizard.export.ansible import render_ansible
from gpuwizard.export.answers import render_answers
from gpuwizard.export.bash import render_bash
from gpuwizard.export.cloud_init import render_cloud_init
from gpuwizard.export.docker_host import render_docker_host_notes
from gpuwizard.export.dockerfile import render_dockerfile
from gpuwizard.export.source import ExportError, ExportSource
from gpuwizard.export.user_data import SUFFIX, compress, size_note


@dataclass(frozen=True)
class ExportFile:
    name: str
    content: str
    """The text a person reviews (for a ``.gz`` file, what ``zcat`` shows)."""
    mode: int
    language: str
    """For syntax highlighting: bash, docker, yaml, markdown."""

    @cached_property
    def data(self) -> bytes:
        """The file's bytes: ``content`` in UTF-8, gzip-compressed for a ``.gz`` name."""
        return compress(self.content) if self.name.endswith(SUFFIX) else self.content.encode()

    @property
    def note(self) -> str:
        """What a person should know of the file beyond its name (a compressed one's size)."""
        return (
            size_note(self.data, len(self.content.encode())) if self.name.endswith(SUFFIX) else ""
        )


@dataclass(frozen=True)
class Format:
    name: str
    title: str
    files: tuple[tuple[str, Callable[[ExportSource], str], int, str], ...]
    """(file name, renderer, mode, language)."""


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("script", "Deploy script (bash)", (("deploy.sh", render_bash, 0o755, "bash"),)),
        Format(
            "dockerfile",
            "Dockerfile",
            (
                ("Dockerfile", render_dockerfile, 0o644, "docker"),
                ("docker-host.md", render_docker_host_notes, 0o644, "markdown"),
            ),
        ),
        Format("answers", "Answers file (apply --config)", (("answers.yaml", render_answers, 0o644, "yaml"),)),
        Format("ansible", "Ansible playbook", (("playbook.yml", render_ansible, 0o644, "yaml"),)),
        Format("cloud-init", "cloud-init user-data", (("cloud-init.yaml.gz", render_cloud_init, 0o644, "yaml"),)),
    )
}  # fmt: skip


def render(source: ExportSource, name: str) -> list[ExportFile]:
    """The files of one format for this source. Raises ExportError when it cannot be made."""
    try:
        chosen = FORMATS[name]
    except KeyError:
        raise ExportError(f"unknown format {name!r} (choose from {', '.join(FORMATS)})") from None
    return [
        ExportFile(file, renderer(source), mode, language)
        for file, renderer, mode, language in chosen.files
    ]
