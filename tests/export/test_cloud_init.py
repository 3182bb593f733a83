"""cloud-init user-data (``render_cloud_init``): golden files, valid YAML that carries deploy.sh
byte for byte, the detached first run and the resume unit, and no secrets.

Regenerate the golden files on purpose, after reviewing the change, with
``GPUWIZARD_UPDATE_GOLDEN=1 pytest tests/export``.
"""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwizard.core.ops import Command
from gpuwizard.core.plan import StepPlan, WriteFile
from gpuwizard.export.bash import render_bash
from gpuwizard.export.cloud_init import render_cloud_init
from gpuwizard.export.source import ExportError
from tests.export.conftest import check_golden, mok_source
from tests.export.deploy_harness import source_with
from tests.export.test_bash import CASES

UNATTENDED = {
    name: source
    for name, source in CASES.items()
    if name not in ("t4-debian12-secureboot-mok", "t4-debian12-secureboot")  # a MOK password
}


@pytest.mark.parametrize("name", UNATTENDED)
def test_cloud_init_matches_its_golden_file(name):
    check_golden(name, "cloud-init.yaml", render_cloud_init(UNATTENDED[name]))


@pytest.mark.parametrize("name", UNATTENDED)
def test_cloud_init_is_yaml_that_carries_deploy_sh_byte_for_byte(name):
    source = UNATTENDED[name]
    text = render_cloud_init(source)
    assert text.startswith("#cloud-config\n")
    data = yaml.safe_load(text)
    assert set(data) == {"write_files", "runcmd"}
    (script,) = data["write_files"]
    assert script == {
        "path": "/var/lib/gpuwizard/deploy.sh",
        "owner": "root:root",
        "permissions": "0700",
        "content": render_bash(source),
    }
    assert "content: |\n" in text, "the script stays readable as a literal block"


def test_the_first_run_is_handed_to_systemd_so_cloud_init_can_finish_and_it_resumes_after_boots():
    data = yaml.safe_load(render_cloud_init(UNATTENDED["h100x8-ubuntu2204-fresh"]))
    assert data["runcmd"] == [
        [
            "systemd-run", "--unit=gpuwizard-deploy-first-boot", "--no-block",
            "/bin/bash", "/var/lib/gpuwizard/deploy.sh", "--reboot", "--install-resume-unit",
        ]
    ]  # fmt: skip


def test_a_plan_that_needs_a_secret_is_refused_in_one_line():
    with pytest.raises(ExportError) as refused:
        render_cloud_init(mok_source())
    message = str(refused.value)
    assert "mok-password" in message
    assert "unattended" in message
    assert "\n" not in message


ODD = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\0"), max_size=40
) | st.sampled_from(
    ["trailing space \n", "\ttab\n", "\r\n", "\u2028", "\x85", "\ufeff", " lead\n", "|\n-"]
)


@settings(max_examples=150, deadline=None)
@given(content=ODD, title=ODD, arg=ODD)
def test_any_file_content_title_or_argument_round_trips_through_the_yaml(content, title, arg):
    step = StepPlan(
        "odd", title, "why", (WriteFile("/etc/odd", content), Command(("fake-tool", arg)))
    )
    source = source_with([step])
    data = yaml.safe_load(render_cloud_init(source))
    assert data["write_files"][0]["content"] == render_bash(source)
