"""answers.yaml: what it records, how strictly it loads, and when a replay is refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwizard.core.request import WISHES, SetupRequest
from gpuwizard.export import answers as answers_module
from gpuwizard.export.answers import Answers, AnswersError, load_answers, misfits, render_answers
from tests.conftest import facts_of
from tests.export.conftest import PROFILES, check_golden, source_for

GOLDEN = Path(__file__).with_name("golden")
SCHEMA_2 = Path(__file__).with_name("older") / "answers-schema2.yaml"
"""h100x8-ubuntu2204-fresh's answers.yaml as gpuwizard wrote it with schema 2 (choices and
options side by side)."""


@pytest.mark.parametrize("profile", PROFILES)
def test_answers_match_their_golden_file(profile: str) -> None:
    check_golden(profile, "answers.yaml", render_answers(source_for(profile)))


@pytest.mark.parametrize("profile", PROFILES)
def test_answers_round_trip_to_the_same_request(profile: str) -> None:
    source = source_for(profile)
    loaded = load_answers(render_answers(source))
    assert loaded.request == source.replayed
    assert loaded.plan == source.plan.summary
    assert loaded.made_on.architecture == source.facts.hardware.gpus[0].model.arch


def test_every_wish_is_written_out_and_every_version_is_a_quoted_string() -> None:
    request = SetupRequest(env_kind="conda", env_name="train-1", docker=True, dcgm=True, nccl=True, hold_driver=True, needs_nvcc=True, cudnn=True)  # fmt: skip
    text = render_answers(source_for("h100x8-ubuntu2204-fresh", request))
    data = yaml.safe_load(text)
    left_to_gpuwizard = {"driver_branch", "driver_flavour", "python", "use_env"}
    assert set(data["request"]) == {w.name for w in WISHES} - left_to_gpuwizard
    assert data["request"]["env_kind"] == "conda" and data["request"]["docker"] is True
    assert '  torch: "2.14.1"' in text and '  variant: "cu130"' in text
    assert text.startswith("# gpuwizard answers")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: "- 1\n", "expected a mapping of answers"),
        (lambda t: t.replace("schema: 3", "schema: 9"), "schema 9 was written by gpuwizard 0.1.0; this is gpuwizard 0.1.0 (schema 3): upgrade"),
        (lambda t: t.replace("schema: 3", 'schema: "3"'), "schema: expected a whole number"),
        (lambda t: t.replace("keep_driver: false", "keep_driver: false\n  nvcc: true"), "request.nvcc: unknown field"),
        (lambda t: t.replace('"2.14.1"', "2.141"), "request.torch: expected a string, got the number 2.141 (quote it"),
        (lambda t: t.replace('"2.14.1"', '"2.14.x"'), "request.torch '2.14.x': expected a version like 2.14.1"),
        (lambda t: t.replace('"cu130"', '"rocm6.2"'), "request.variant 'rocm6.2': expected a CUDA build name like cu126"),
        (lambda t: t.replace('env_kind: "venv"', 'env_kind: "nix"'), "request.env_kind: expected one of 'venv', 'conda', got 'nix'"),
        (lambda t: t.replace('env_name: "pytorch"', 'env_name: "x; rm -rf /"'), "request.env_name 'x; rm -rf /': use letters, digits"),
        (lambda t: t.replace("  torch:", "  pytorch:"), "request.pytorch: unknown field"),
        (lambda t: t.replace("keep_driver: false", 'keep_driver: "no"'), "request.keep_driver: expected true or false"),
        (lambda t: re.sub(r"request:\n(  .*\n)+", "", t), "request: missing"),
        (lambda t: t + "extra: &a [1]\n", "YAML anchors (&name) are not allowed"),
        (lambda t: "a: [1]\nb: *x\n", "YAML aliases (*name) are not allowed"),
        (lambda t: t + "request: [\n", "not valid YAML at line"),
        (lambda t: "!!python/object/apply:os.system ['true']\n", "not valid YAML"),
        (lambda t: "x: " + "a" * (1 << 20), "larger than 1 MiB"),
    ],
)  # fmt: skip
def test_a_bad_or_hostile_file_is_one_line_naming_the_field(edit, message: str) -> None:  # type: ignore[no-untyped-def]
    text = edit(render_answers(source_for("h100x8-ubuntu2204-fresh")))
    with pytest.raises(AnswersError) as raised:
        load_answers(text)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_schema_2_file_loads_as_the_same_answers() -> None:
    """choices and options side by side (schema 2) are one request (schema 3)."""
    old = SCHEMA_2.read_text(encoding="utf-8")
    assert "schema: 2" in old and "choices:" in old and "options:" in old
    assert load_answers(old) == load_answers(render_answers(source_for("h100x8-ubuntu2204-fresh")))


@pytest.mark.parametrize("missing", ["choices", "options"])
def test_a_schema_2_file_without_its_choices_or_options_is_refused(missing: str) -> None:
    old = SCHEMA_2.read_text(encoding="utf-8").replace(f"{missing}:", "elsewhere:")
    with pytest.raises(AnswersError, match=f"^{missing}: missing$"):
        load_answers(old)


def schema_1(text: str, in_choices: bool, in_options: bool) -> str:
    """A schema 1 file as gpuwizard 0.1.0 wrote it (from a schema 2 one): the nvcc wish in
    choices and in options."""
    old = text.replace("schema: 2", "schema: 1")
    old = old.replace(
        "keep_driver: false", f"keep_driver: false\n  needs_nvcc: {str(in_choices).lower()}"
    )
    return re.sub(
        r"needs_nvcc: (true|false)\n  cudnn", f"needs_nvcc: {str(in_options).lower()}\n  cudnn", old
    )


@pytest.mark.parametrize("nvcc", [False, True])
def test_a_schema_1_file_that_says_nvcc_twice_the_same_way_loads_as_the_one_wish(
    nvcc: bool,
) -> None:
    text = SCHEMA_2.read_text(encoding="utf-8")
    text = text.replace("needs_nvcc: false", f"needs_nvcc: {str(nvcc).lower()}")
    assert "schema: 2" in text and text.count("needs_nvcc") == 1
    old = schema_1(text, nvcc, nvcc)
    assert old.count("needs_nvcc") == 2 and "schema: 1" in old
    loaded = load_answers(old)
    assert loaded == load_answers(text)
    assert loaded.request.needs_nvcc is nvcc and loaded.schema == 3


@pytest.mark.parametrize(("in_choices", "in_options"), [(True, False), (False, True)])
def test_a_schema_1_file_whose_two_nvcc_wishes_disagree_is_refused(
    in_choices: bool, in_options: bool
) -> None:
    old = schema_1(SCHEMA_2.read_text(encoding="utf-8"), in_choices, in_options)
    with pytest.raises(AnswersError) as refused:
        load_answers(old)
    assert str(refused.value) == (
        f"choices.needs_nvcc ({str(in_choices).lower()}) and options.needs_nvcc"
        f" ({str(in_options).lower()}) disagree: keep the one you mean in options.needs_nvcc"
        " and delete choices.needs_nvcc"
    )


def test_the_migration_chain_runs_step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    text = SCHEMA_2.read_text(encoding="utf-8")

    def from_zero(data: dict) -> dict:  # type: ignore[type-arg]
        data = dict(data, schema=1)
        data["choices"] = data.pop("pins")
        return data

    monkeypatch.setitem(answers_module.MIGRATIONS, 0, from_zero)
    old = (
        schema_1(text, False, False).replace("schema: 1", "schema: 0").replace("choices:", "pins:")
    )
    assert load_answers(old) == load_answers(text)
    with pytest.raises(AnswersError, match="schema -1 is too old"):
        load_answers(text.replace("schema: 2", "schema: -1"))
    assert load_answers(text).schema == 3


def test_the_same_kind_of_server_fits() -> None:
    answers = load_answers(render_answers(source_for("h100x8-ubuntu2204-fresh")))
    assert misfits(answers, facts_of("h100x8-ubuntu2204-fresh")) == []


def test_another_server_is_named_fact_by_fact_by_the_one_host_rule() -> None:
    answers = load_answers(render_answers(source_for("h100x8-ubuntu2204-fresh")))
    assert misfits(answers, facts_of("a100x4-ubuntu2004-fresh")) == [
        "GPUs: made for 8x 10de:2330, this host has 4x 10de:20b0",
        "OS: made for ubuntu 22.04, this host has ubuntu 20.04",
    ]
    debian = load_answers(render_answers(source_for("t4-debian12-fresh")))
    assert "OS: made for debian 12, this host has rocky 9.6" in misfits(
        debian, facts_of("l40sx4-rocky9-fresh")
    )


def made_on_changed(profile: str, **fields: str) -> Answers:
    text = render_answers(source_for(profile))
    for name, value in fields.items():
        text = re.sub(rf'^  {name}: ".*"$', f'  {name}: "{value}"', text, count=1, flags=re.M)
    return load_answers(text)


@pytest.mark.parametrize(
    ("profile", "fields", "expected"),
    [
        pytest.param("h100x8-ubuntu2204-fresh", {"gpus": "4x 10de:2330"}, [], id="replay: another number of the same GPUs"),
        pytest.param("l40sx4-rocky9-fresh", {"os_version": "9.4"}, [], id="replay: a newer point release"),
        pytest.param("l40sx4-rocky9-fresh", {"os_version": "9.7"}, ["OS: made for rocky 9.7, this host has rocky 9.6"], id="an older point release"),
        pytest.param("l40sx4-rocky9-fresh", {"os_version": "8.10"}, ["OS: made for rocky 8.10, this host has rocky 9.6"], id="another major release"),
        pytest.param("h100x8-ubuntu2204-fresh", {"os_version": "20.04"}, ["OS: made for ubuntu 20.04, this host has ubuntu 22.04"], id="ubuntu: another release, newer or not"),
        pytest.param("h100x8-ubuntu2204-fresh", {"driver": "570"}, ["loaded NVIDIA driver branch: made for 570, this host has none"], id="another loaded driver: named, not a different plan"),
        pytest.param("h100x8-ubuntu2204-fresh", {"cpu": "aarch64"}, ["CPU architecture: made for aarch64, this host has x86_64"], id="another CPU"),
        pytest.param("h100x8-ubuntu2204-fresh", {"gpus": "", "driver": ""}, [], id="a file from before: GPU architecture only"),
        pytest.param("h100x8-ubuntu2204-fresh", {"gpus": "", "architecture": "Ampere"}, ["they were made for Ampere GPUs (sm 9.0); this server has Hopper (sm 9.0)"], id="a file from before, another architecture"),
    ],
)  # fmt: skip
def test_what_a_replay_allows_that_a_script_does_not(
    profile: str, fields: dict[str, str], expected: list[str]
) -> None:
    assert misfits(made_on_changed(profile, **fields), facts_of(profile)) == expected


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_text_in_a_string_field_loads_back_exactly_or_is_refused(value: str) -> None:
    """Quotes, colons, #, newlines, non-ASCII: the writer quotes, the reader gives it back."""
    source = source_for("h100x8-ubuntu2204-fresh")
    text = render_answers(source)
    data = yaml.safe_load(text)
    data["made_on"]["gpu"] = value
    dumped = yaml.dump(
        data, Dumper=answers_module._QuotingDumper, sort_keys=False, allow_unicode=True
    )
    try:
        loaded, refused = load_answers(dumped).made_on.gpu, ""
    except AnswersError as error:  # only for text YAML cannot carry (some control characters)
        loaded, refused = None, str(error)
    assert loaded == value or (loaded is None and refused and "\n" not in refused)


T37_TRAPS = ("no", "on", "12.10", "3.10", "0755", "1e3", "~", "535.104.05", "null", "yes", "0x1F")


@pytest.mark.parametrize("trap", T37_TRAPS)
def test_t37_yaml_implicit_typing_traps_come_back_as_the_same_strings(trap: str) -> None:
    """reliability.md T37: a value YAML would read as a bool, float, octal or null stays text."""
    source = source_for(
        "h100x8-ubuntu2204-fresh", SetupRequest(env_name=trap if trap[0].isalnum() else "x")
    )
    text = render_answers(source)
    data = yaml.safe_load(text)
    data["made_on"]["gpu"] = data["made_on"]["os_version"] = trap
    data["plan"] = [trap]
    dumped = yaml.dump(data, Dumper=answers_module._QuotingDumper, sort_keys=False)
    loaded = load_answers(dumped)
    assert (loaded.made_on.gpu, loaded.made_on.os_version, loaded.plan) == (trap, trap, (trap,))
    if trap[0].isalnum():
        assert load_answers(text).request.env_name == trap


@pytest.mark.parametrize(
    ("unquoted", "why"),
    [("2.14", "expected a string, got the number"), ("12.10", "expected a string, got the number"),
     ("1e3", "expected a version like 2.14.1")],
)  # fmt: skip
def test_t37_a_version_written_as_a_number_is_refused(unquoted: str, why: str) -> None:
    text = render_answers(source_for("h100x8-ubuntu2204-fresh")).replace('"2.14.1"', unquoted)
    with pytest.raises(AnswersError, match=rf"^request\.torch(:| '1e3':) {re.escape(why)}"):
        load_answers(text)


def test_answers_record_the_cpu_and_refuse_another_with_the_exports_host_check() -> None:
    text = render_answers(source_for("h100x8-ubuntu2204-fresh"))
    assert load_answers(text).made_on.cpu == "x86_64"
    arm = load_answers(text.replace('cpu: "x86_64"', 'cpu: "aarch64"'))
    assert misfits(arm, facts_of("h100x8-ubuntu2204-fresh")) == [
        "CPU architecture: made for aarch64, this host has x86_64"
    ]
    older = load_answers("\n".join(line for line in text.splitlines() if "cpu:" not in line))
    assert older.made_on.cpu == "" and misfits(older, facts_of("h100x8-ubuntu2204-fresh")) == []
