"""Support bundle redaction keeps structured files valid (issue 14): JSON and YAML are parsed,
every string redacted, and written back, never edited as text. Every structured file of a
bundle loads afterwards, and the whole bundle holds no canary: secret, hostname, IP, MAC."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
import yaml

from gpuwizard.doctor.bundle import write_bundle
from gpuwizard.doctor.observed import LogText
from gpuwizard.doctor.redact import Redactor
from gpuwizard.runner.layout import EXIT_FAILED, JOURNAL
from gpuwizard.sim.machine import sandbox_host
from tests.doctor.test_sim import CANARIES, LEAKY_OUTPUT, archive_text, doctor

pytestmark = [pytest.mark.timeout(180)]

# A secret holding a quote, as JSON escapes it (\"): the text rules stop inside the escape and
# leave a string that no longer ends where it should.
TRICKY_JSON = (
    f'{{"step": "x", "reason": "token=Canary-Pa55word at {CANARIES["ipv4"]}", '
    '"password": "Canary\\"Pa55"}'
)


def test_text_rules_break_json_and_the_structured_redaction_does_not() -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(Redactor().redact(TRICKY_JSON))  # the bug: text substitution

    redacted = Redactor().redact_json(TRICKY_JSON)

    assert redacted is not None
    data = json.loads(redacted)
    assert data["password"] == "<secret-2>", "a value under a secret's key goes whole"
    assert data["reason"] == "token=<secret-1> at <ip-1>"
    assert data["step"] == "x"
    assert CANARIES["ipv4"] not in redacted and "Pa55" not in redacted


@pytest.mark.parametrize(
    ("key", "value", "placeholder"),
    [
        pytest.param("hostname", "gpu-box-7", "<host-1>", id="a host key"),
        pytest.param("api_key", "k-123", "<secret-1>", id="a secret key"),
        pytest.param("board-serial", "ABC123", "<serial-1>", id="a serial key"),
        pytest.param("tokenizer", "gpt2", "gpt2", id="a word that only contains one: kept"),
        pytest.param("hostname", "ubuntu", "ubuntu", id="an image default: kept"),
    ],
)
def test_a_key_that_names_what_its_value_is_replaces_it_whole(key, value, placeholder) -> None:
    redacted = Redactor().redact_yaml(f"{key}: {value}\nnested:\n  - {{{key}: {value}}}\n")
    assert redacted is not None
    assert yaml.safe_load(redacted) == {key: placeholder, "nested": [{key: placeholder}]}


def test_a_file_that_does_not_parse_is_redacted_as_text() -> None:
    torn = f'{{"reason": "from {CANARIES["ipv4"]}'
    assert Redactor().redact_file("journal.json", torn) == '{"reason": "from <ip-1>'


def structured_members(path: Path) -> dict[str, object]:
    loaded: dict[str, object] = {}
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            handle = archive.extractfile(member)
            if handle is None:
                continue
            text = handle.read().decode("utf-8")
            if member.name.endswith(".json"):
                loaded[member.name] = json.loads(text)
            elif member.name.endswith((".yaml", ".yml")):
                loaded[member.name] = list(yaml.safe_load_all(text))
    return loaded


@pytest.mark.slow
def test_every_structured_file_of_a_bundle_loads_and_no_canary_is_left(sim, tmp_path) -> None:
    host = sim("h100x8-ubuntu2204-fresh")
    host.write("/etc/hostname", f"{CANARIES['hostname']}\n")
    host.write("/proc/sys/kernel/hostname", f"{CANARIES['hostname']}\n")
    host.write("/sys/class/dmi/id/product_serial", f"{CANARIES['serial']}\n")
    host.scenario(rules=[{"tool": "apt-get", "match": "install", "times": 1, "exit": 100, "output": LEAKY_OUTPUT}])  # fmt: skip
    host.plan()
    assert host.run() == EXIT_FAILED
    journal = json.loads((host.state_dir / JOURNAL).read_text())
    journal["steps"][0]["reason"] = (
        f"password={CANARIES['password']} on {CANARIES['hostname']} ({CANARIES['mac']})"
    )
    (host.state_dir / JOURNAL).write_text(json.dumps(journal, indent=1))
    named = [
        LogText("inventory", "/etc/ansible/hosts.yaml", yaml.safe_dump({
            "all": {"hosts": {CANARIES["hostname"]: {"ansible_host": CANARIES["ipv4"], "mac": CANARIES["mac"],
                                                       "ansible_become_password": CANARIES["password"]}}},
        })),
        LogText("settings", "/root/settings.json", TRICKY_JSON),
    ]  # fmt: skip
    result = doctor(host)

    bundle = write_bundle(
        tmp_path / "b.tar.gz", result, sandbox_host(host.sandbox), host.state_dir, named
    )

    loaded = structured_members(bundle.path)
    names = {name.removeprefix("gpuwizard-bundle/") for name in loaded}
    assert {"doctor.json", "facts.json", JOURNAL, "manifest.json"} <= names
    assert any(n.endswith(".yaml") for n in names) and any(
        n.endswith("settings.json") for n in names
    )
    text = archive_text(bundle.path)
    for kind, value in {**CANARIES, "tricky": "Pa55", "ipv6-full": "2001:0db8"}.items():
        assert value.lower() not in text.lower(), f"the {kind} leaked"
    journal_now = loaded[f"gpuwizard-bundle/{JOURNAL}"]
    assert isinstance(journal_now, dict)
    reason = journal_now["steps"][0]["reason"]
    assert reason.startswith("password=<secret-") and "<host-1>" in reason and "<mac-" in reason
