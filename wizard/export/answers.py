"""answers.yaml: the choices behind a setup, to replay it elsewhere (``apply --config``).

It records wishes, not commands: the request the setup was made from (``core.request``: the torch
release and CUDA build it resolved to, whether the driver was kept, the environment and the
optional parts; the driver branch, kernel modules and Python only when they were pinned), the
machine it was made on, and what the plan resolved to. Replaying re-detects the new server, reruns
the engine with the same request and refuses, naming each difference, a server unlike the one
they were made on (the exports' one host rule, hostcheck.py, as a replay applies it; ``--force``
waives it) or a plan that resolves differently (``--accept-changes``).

Loading is strict: a file that is not a mapping, has YAML anchors or aliases (no alias bombs),
is larger than 1 MiB, has an unknown or missing field, a version written as a number
(``12.10`` would load as 12.1), or a control or format character in a text field (an escape
sequence would reach the terminal that shows it) gets one line naming the field. A file from an older schema is
migrated step by step (``MIGRATIONS``); one from a newer gpuwizard is refused. Schema 1 said the
nvcc wish twice (``choices.needs_nvcc`` and ``options.needs_nvcc``); schema 2 says it once, and a
schema 1 file whose two disagree is refused rather than guessed at. Schema 3 keeps every wish in
one ``request`` block (schema 2's ``choices`` and ``options``, merged).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import yaml

from gpuwizard import __version__
from gpuwizard.core.codec import CodecError, from_jsonable, to_jsonable
from gpuwizard.core.facts import HostFacts
from gpuwizard.core.request import SetupRequest, Wish
from gpuwizard.core.safetext import is_unsafe, one_line
from gpuwizard.export.hostcheck import HostIdentity, host_differences, identity
from gpuwizard.export.source import ExportSource
from gpuwizard.recommend.release_pins import check_request
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import BadInput

SCHEMA = 3
MAX_BYTES = 1 << 20


class AnswersError(ValueError):
    """The answers file cannot be used; one line naming the field and the fix."""


def _nvcc_said_once(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 -> 2: ``choices.needs_nvcc`` goes; ``options.needs_nvcc`` is the one wish."""
    choices, options = data.get("choices"), data.get("options")
    if not isinstance(choices, dict) or "needs_nvcc" not in choices:
        return dict(data, schema=2)
    choices = dict(choices)
    said = choices.pop("needs_nvcc")
    if isinstance(options, dict):
        wanted = options.get("needs_nvcc", said)
        if wanted != said:
            raise AnswersError(
                f"choices.needs_nvcc ({_yaml_word(said)}) and options.needs_nvcc ({_yaml_word(wanted)})"
                " disagree: keep the one you mean in options.needs_nvcc and delete choices.needs_nvcc"
            )
        options = dict(options, needs_nvcc=said)
    return dict(data, schema=2, choices=choices, options=options)


def _yaml_word(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else repr(value)


def _one_request(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 -> 3: the engine's pins (``choices``) and the rest (``options``) become one
    ``request``, keyed as the request's wishes are."""
    merged = {
        key: value
        for part in ("choices", "options")
        if isinstance(data.get(part), dict)
        for key, value in data[part].items()
    }
    for part in ("gpuwizard", "made_on", "choices", "options", "plan"):  # schema 2's, in order
        if part not in data:
            raise AnswersError(f"{part}: missing")
    for part in ("choices", "options"):
        if not isinstance(data[part], dict):
            raise AnswersError(f"{part}: expected a mapping of answers")
    rest = {k: v for k, v in data.items() if k not in ("choices", "options", "schema")}
    return {"schema": 3, **rest, "request": merged}


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: _nvcc_said_once,
    2: _one_request,
}
"""schema N -> a function turning a schema N mapping into schema N+1."""


@dataclass(frozen=True)
class MadeOn:
    """The machine the answers were made on, as far as fitting them elsewhere goes."""

    gpu: str
    """"8x H100 SXM5 80GB"."""
    architecture: str
    """"Hopper"; "none" without an NVIDIA GPU."""
    compute_capability: str
    os: str
    """os-release ID: ubuntu, debian, rocky."""
    os_version: str
    cpu: str = ""
    """``uname -m`` (x86_64, aarch64); empty in files from before it was recorded."""
    gpus: str = ""
    """The GPUs as PCI ids and count, as deploy.sh records them ("8x 10de:2330"); empty in files
    from before, whose GPU architecture is compared instead."""
    driver: str = ""
    """The loaded NVIDIA driver branch ("570", "none"); empty in files from before."""


@dataclass(frozen=True)
class Answers:
    schema: int
    gpuwizard: str
    made_on: MadeOn
    request: SetupRequest
    plan: tuple[str, ...]
    """The plan summary it resolved to; a replay that resolves differently is refused."""


def made_on(facts: HostFacts) -> MadeOn:
    here = identity(facts)
    gpus = facts.hardware.gpus
    model = gpus[0].model if gpus else None
    return MadeOn(
        gpu=one_line(here.gpu_names),
        architecture=model.arch if model else "none",
        compute_capability=(model.compute_capability or "unknown") if model else "none",
        # os-release is the machine's text: only its clean form goes into the file.
        os=one_line(facts.os.id) if facts.os else "unknown",
        os_version=one_line(facts.os.version_id) if facts.os else "unknown",
        cpu=one_line(here.arch),
        gpus="" if facts.platform.wsl else one_line(here.gpus),
        driver=one_line(here.driver),
    )


def answers_for(source: ExportSource) -> Answers:
    return Answers(
        schema=SCHEMA,
        gpuwizard=source.version,
        made_on=made_on(source.facts),
        request=source.replayed,
        plan=source.plan.summary,
    )


HEADER = """\
# gpuwizard answers: the choices behind a GPU server setup.
# Replay on another server:  sudo gpuwizard apply --config answers.yaml
# It re-detects that server, refuses with the reason where these choices do not fit it, and
# shows the plan it made there before anything changes.
# Versions are strings: keep them quoted.
"""


def render_answers(source: ExportSource) -> str:
    data = to_jsonable(answers_for(source))
    # A wish left to gpuwizard (None) is not written: the engine picks it again on replay.
    data["request"] = {key: value for key, value in data["request"].items() if value is not None}
    body = yaml.dump(data, Dumper=_QuotingDumper, sort_keys=False, allow_unicode=True, width=100)
    return HEADER + body


class _QuotingDumper(yaml.SafeDumper):
    """Every string value quoted, so nothing a person edits later turns into a number or a bool;
    keys stay plain."""


def _quoted(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')


def _plain_keys(dumper: yaml.SafeDumper, value: dict[str, Any]) -> yaml.MappingNode:
    node = dumper.represent_mapping("tag:yaml.org,2002:map", value)
    for key, _ in node.value:
        key.style = None
    return node


_QuotingDumper.add_representer(str, _quoted)
_QuotingDumper.add_representer(dict, _plain_keys)


MAX_DEPTH = 16
"""An answers file nests three deep; the loader stops at this depth (Python's recursion limit
took a second to reach and unwind, and a deeper file is no answers file)."""


class _NoAliases(yaml.SafeLoader):
    """safe_load without anchors, aliases, a key given twice or deep nesting: an answers file
    never needs the first two, and with the third the last value would silently win (the
    journal's reader refuses it too)."""

    depth = 0

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)  # merges (<<) first
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                line = key_node.start_mark.line + 1
                raise AnswersError(f"the key {key!r} is given twice (line {line}): keep one")
            seen.add(key)
        return super().construct_mapping(node, deep)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise AnswersError("YAML aliases (*name) are not allowed in an answers file")
        if getattr(self.peek_event(), "anchor", None):  # type: ignore[no-untyped-call]
            raise AnswersError("YAML anchors (&name) are not allowed in an answers file")
        if self.depth >= MAX_DEPTH:
            raise AnswersError("not an answers file: nested too deeply")
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def load_answers(text: str) -> Answers:
    """Parse, migrate and check an answers file; AnswersError says what is wrong, in one line."""
    if len(text.encode("utf-8", "replace")) > MAX_BYTES:
        raise AnswersError("the file is larger than 1 MiB: not an answers file")
    try:
        data = yaml.load(text, Loader=_NoAliases)  # a SafeLoader: no Python objects
    except RecursionError:
        raise AnswersError("not an answers file: nested too deeply") from None
    except AnswersError:
        raise
    except ValueError as error:  # a 5,000-digit number, a 13th month: Python refuses the value
        raise AnswersError(f"not an answers file: {str(error).split(';')[0]}") from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise AnswersError(f"not valid YAML{line}: {getattr(error, 'problem', error)}") from None
    if not isinstance(data, dict):
        raise AnswersError("expected a mapping of answers (schema, made_on, request, plan)")
    data = migrate(data)
    try:
        answers = from_jsonable(Answers, data)
    except CodecError as error:
        raise AnswersError(str(error).replace("$.", "", 1)) from None
    _check_text(answers)
    _check_values(answers)
    return answers


def _text_fields(answers: Answers) -> list[tuple[str, str]]:
    made = answers.made_on
    fields = [("gpuwizard", answers.gpuwizard)]
    fields += [(f"made_on.{name}", getattr(made, name)) for name in MadeOn.__dataclass_fields__]
    fields += [(f"plan[{i}]", line) for i, line in enumerate(answers.plan)]
    return fields


def _check_text(answers: Answers) -> None:
    """Free text is shown on a terminal (a refused replay quotes it): plain characters only."""
    for field, value in _text_fields(answers):
        bad = next((c for c in value if c in "\n\t" or is_unsafe(c)), None)
        if bad is not None:
            raise AnswersError(
                f"{field}: contains the control character U+{ord(bad):04X}; an answers file holds plain one-line text"
            )


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    schema = data.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise AnswersError(f"schema: expected a whole number (this gpuwizard writes {SCHEMA})")
    if schema > SCHEMA:
        writer = data.get("gpuwizard")
        written = (
            f"written by gpuwizard {writer}"
            if isinstance(writer, str)
            else "written by a newer gpuwizard"
        )
        raise AnswersError(
            f"schema {schema} was {written}; this is gpuwizard {__version__} (schema {SCHEMA}): upgrade"
        )
    while schema < SCHEMA:
        step = MIGRATIONS.get(schema)
        if step is None:
            raise AnswersError(
                f"schema {schema} is too old to read (this gpuwizard reads {SCHEMA})"
            )
        data = step(data)
        schema = data["schema"]
    return data


def _key(wish: Wish) -> str:
    return f"request.{wish.name}"


def _check_values(answers: Answers) -> None:
    """Every wish as the command line's are checked, named by its key in the file."""
    try:
        check_request(load_table(), answers.request, _key)
    except BadInput as error:
        raise AnswersError(str(error)) from None


def misfits(answers: Answers, facts: HostFacts) -> list[str]:
    """Why this server is not one the answers were made for (empty when it is): the exports' one
    host rule (hostcheck.py) as a replay applies it, for every fact the file records. A file from
    before GPU ids were recorded is held to its GPU architecture instead."""
    there = answers.made_on
    made = HostIdentity(there.gpus, f"{there.os} {there.os_version}", there.cpu, there.driver)
    reasons = host_differences(made, identity(facts), gpus=not facts.platform.wsl, use="replay")
    return _before_gpu_ids(there, made_on(facts)) + reasons if not there.gpus else reasons


def _before_gpu_ids(there: MadeOn, here: MadeOn) -> list[str]:
    """Answers files from before the GPUs were recorded: the same GPU architecture."""
    reasons = []
    if here.architecture != there.architecture:
        reasons.append(
            f"they were made for {there.architecture} GPUs (sm {there.compute_capability}); "
            f"this server has {here.architecture} (sm {here.compute_capability})"
        )
    return reasons
