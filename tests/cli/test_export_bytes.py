"""Exports are data, written byte for byte (issue 28).

``gpuwizard export`` wrapped stdout in the terminal sanitiser, whose carriage-return collapse
keeps only what follows a CR: a recorded host whose kernel folder was
``5.15.0-126-generic\\rx; touch${IFS}PWNED; #`` made ``export --format script > deploy.sh``
hold ``x; touch${IFS}PWNED; #'``, which bash accepted and ran. Now a format on stdout is the
``-o`` file's bytes; no value from outside enters a generated file with a control, escape or
bidi character (a kernel folder that is no kernel release is not one; anything else is
refused, naming the file and line); text that only describes the machine is cleaned.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import tarfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwizard.core.ops import AptInstall
from gpuwizard.core.plan import StepPlan
from gpuwizard.core.safetext import first_unsafe
from gpuwizard.export.formats import FORMATS, render
from gpuwizard.export.source import ExportError
from gpuwizard.frontends.cli import main
from gpuwizard.runner.files import unsafe_folder
from gpuwizard.sim import profiles
from tests.cli.test_hostile_text import hostile_host, unsafe_in  # noqa: F401 - the fixture
from tests.export.deploy_harness import source_with

KERNEL_CR = "5.15.0-126-generic\rx; touch${IFS}PWNED; #"
WRITES_EVERY_FORMAT = [f for f in FORMATS if f != "cloud-init"] + ["cloud-init"]


@pytest.fixture
def kernel_cr_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The 8x H100 recorded host with one more folder in /lib/modules, named as in the report."""
    hosts = tmp_path / "hosts"
    shutil.copytree(profiles.profiles_dir() / "h100x8-ubuntu2204-fresh", hosts / "kernel-cr")
    (hosts / "kernel-cr" / "root" / "lib" / "modules" / KERNEL_CR).mkdir(parents=True)
    monkeypatch.setattr(profiles, "profiles_dir", lambda: hosts)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return "kernel-cr"


def exported(capsysbinary: pytest.CaptureFixture[bytes], *args: str) -> tuple[int, bytes]:
    code = main(list(args))
    out, _ = capsysbinary.readouterr()
    return code, out


def test_a_carriage_return_in_a_kernel_folder_never_reaches_deploy_sh(
    kernel_cr_host: str, capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path
) -> None:
    code, stdout = exported(
        capsysbinary, "--simulate", kernel_cr_host, "export", "--format", "script"
    )
    assert code == 0
    assert b"PWNED" not in stdout and b"\r" not in stdout
    assert exported(capsysbinary, "--simulate", kernel_cr_host, "export", "-o", "out")[0] == 0
    assert (tmp_path / "out" / "deploy.sh").read_bytes() == stdout, "stdout is the file"


@pytest.mark.parametrize("name", WRITES_EVERY_FORMAT)
def test_stdout_is_the_o_file_byte_for_byte_even_from_a_hostile_host(
    hostile_host: str,  # noqa: F811 - the fixture imported above
    capsysbinary: pytest.CaptureFixture[bytes],
    tmp_path: Path,
    name: str,
) -> None:
    """The recorded host whose os-release and CPU name carry OSC 52, OSC 8, CSI 2J, a bell and
    U+202E: every format exports, and what it writes holds none of them."""
    code, stdout = exported(
        capsysbinary, "--simulate", hostile_host, "export", "--format", name, "-o", "out"
    )
    assert code == 0
    written = sorted((tmp_path / "out").iterdir())
    for file in written:
        data = file.read_bytes()
        text = gzip.decompress(data) if file.name.endswith(".gz") else data  # what cloud-init reads
        assert unsafe_in(text.decode("utf-8")) == [], file.name
    if len(written) == 1:
        code, stdout = exported(
            capsysbinary, "--simulate", hostile_host, "export", "--format", name
        )
        assert code == 0
        assert stdout == written[0].read_bytes()


def test_a_deploy_sh_from_a_hostile_host_names_it_cleaned(
    hostile_host: str,  # noqa: F811
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    code, stdout = exported(
        capsysbinary, "--simulate", hostile_host, "export", "--format", "script"
    )
    assert code == 0
    assert b"Ubuntu click me" in stdout and b"gnp.exe" in stdout, "the text, cleaned"


UNSAFE = st.characters(categories=["Cc", "Cf", "Zl", "Zp"], exclude_characters="\n\t")


@settings(max_examples=40, deadline=None)
@given(char=UNSAFE)
def test_no_generated_file_ever_holds_a_character_that_acts_on_a_terminal(char: str) -> None:
    """A value from outside with such a character (in a package name here) is refused by the
    format that would carry it raw, naming file, line and character; a format that escapes it
    (the Dockerfile's $'\\x..') writes it escaped."""
    step = StepPlan(
        "install-headers", "Headers", "why", (AptInstall((f"linux-headers-6.1{char}x",)),)
    )
    refusals: list[str] = []
    for name in FORMATS:
        try:
            files = render(source_with([step]), name)
        except ExportError as error:
            refusals.append(str(error))
            continue
        for file in files:
            assert first_unsafe(file.content) is None, (name, file.name)
    for refusal in refusals:
        named = f"U+{ord(char):04X}" in refusal and " line " in refusal
        assert named or "NUL" in refusal, refusal
        assert "\n" not in refusal


def test_the_support_bundle_holds_no_escape_from_the_machine_or_a_log(
    hostile_host: str,  # noqa: F811
    capsysbinary: pytest.CaptureFixture[bytes],
    tmp_path: Path,
) -> None:
    """doctor.txt quoted dmesg's and --log's OSC 52 raw; one rule now for every file in it."""
    log = tmp_path / "train.log"
    log.write_text("RuntimeError: CUDA error: out of memory \x1b]52;c;cm0=\x07\u202ehere\n")
    bundle = tmp_path / "bundle.tar.gz"
    code, _ = exported(
        capsysbinary,
        "--simulate",
        hostile_host,
        "doctor",
        "--log",
        str(log),
        "--bundle",
        str(bundle),
    )
    assert code in (0, 1)
    with tarfile.open(bundle) as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        texts = {m.name: archive.extractfile(m).read().decode("utf-8") for m in members}  # type: ignore[union-attr]
    assert any(name.endswith("doctor.txt") for name in texts)
    for name, text in texts.items():
        assert unsafe_in(text) == [], name
    assert any("click me" in text for text in texts.values()), "what the text said is kept"


def test_export_refuses_a_folder_another_user_owns_or_can_write(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the report's case is root exporting into another user's folder")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    for folder, why in (
        (theirs, "is owned by uid 65534, not by you or root"),
        (theirs / "sub", "is owned by uid 65534, not by you or root"),
        (shared, "is writable by other users (mode 0777)"),
    ):
        code = main(["--simulate", "h100x8-ubuntu2204-fresh", "export", "-o", str(folder)])
        _, err = capsys.readouterr()
        assert code == 2, err
        assert why in err and err.count("\n") == 1, err
        assert not any(folder.glob("*")) if folder.exists() else True, "nothing written"
    assert not (theirs / "sub").exists(), "nothing made under it either"
    mine = tmp_path / "mine"
    assert main(["--simulate", "h100x8-ubuntu2204-fresh", "export", "-o", str(mine)]) == 0
    assert (mine / "deploy.sh").exists()


def test_the_bundle_reader_sees_nothing_raw_in_json_either() -> None:
    from gpuwizard.doctor.redact import Redactor

    text = Redactor().redact_file("facts.json", '{"cpu": "x\\u001b]52;c;y\\u0007\\u202ez"}')
    assert unsafe_in(text) == [] and "\\u202e" in text
    assert io.StringIO(text).read()  # still JSON text


def test_a_folder_is_judged_with_every_folder_above_it(tmp_path: Path) -> None:
    """A sticky world-writable folder above (as /tmp) is fine: nobody may rename what others
    own there; the folder itself must be its owner's alone, and no link on the way another's."""
    if os.geteuid() != 0:
        pytest.skip("chown needs root")
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    assert unsafe_folder(sticky / "out", 0) is None, "made there, it is root's"
    assert "writable by other users" in (unsafe_folder(sticky, 0) or "")
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    assert "loose is writable by other users" in (unsafe_folder(loose / "a" / "out", 0) or "")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = sticky / "link"
    link.symlink_to(elsewhere)
    os.lchown(link, 65534, 65534)
    assert "link is a link owned by uid 65534" in (unsafe_folder(link, 0) or "")
    assert unsafe_folder(elsewhere, 0) is None
