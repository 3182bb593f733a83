"""The export formats by name: which files each writes, with what mode, rendered by whom.

``render(source, name)`` is what the CLI and the Export screen call; an export that cannot be
made for this plan (cloud-init for a plan that needs a person at the console) raises
ExportError with the reason. A generated file is data for people and shells, written byte for
byte, never cleaned like terminal text: one holding a control, escape or bidi character (a value
from the machine's facts or an answers file: a carriage return in a kernel's folder name, an
OSC 52 in os-release) is refused, naming the file, the line and the character. Text an exporter
only describes (comments, the machine in words) is cleaned before it enters (``one_line``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from gpuwizard.core.safetext import first_unsafe
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
        Format("answers", "Answers (apply --config)", (("answers.yaml", render_answers, 0o644, "yaml"),)),
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
        ExportFile(file, checked(file, renderer(source)), mode, language)
        for file, renderer, mode, language in chosen.files
    ]


def checked(name: str, content: str) -> str:
    """The file's text, when no character in it may act on a terminal or hide what follows."""
    at = first_unsafe(content)
    if at is None:
        return content
    line_number = content.count("\n", 0, at) + 1
    start = content.rfind("\n", 0, at) + 1
    end = content.find("\n", at)
    line = content[start : end if end >= 0 else len(content)]
    shown = ascii(line[:120])
    raise ExportError(
        f"{name} line {line_number} would hold U+{ord(content[at]):04X} (a control, escape or bidi "
        f"character) in {shown}: a value from this machine's facts or the answers carries it, and "
        "gpuwizard writes no such character into a file meant for people or shells"
    )
