"""Every validator matches the whole value (issue 28): one hypothesis property per validator.

``re.match(r"^...$")`` lets a final newline through (``$`` matches before it): ``apply
--env-name $'pytorch\\n'`` planned the environment ``/opt/gpuwizard/envs/pytorch\\n``. Each
validator gpuwizard has is listed here with what it accepts; for any value it accepts, the
same value with a line break, a carriage return, a space, NUL, a Unicode line separator or an
escape after it is refused, and so is a value whose digits are not ASCII (``int()`` reads
"٣" and "²" alike, and the latter raises). Parsers that pick a value out of a longer text
(``search`` over a log) are not validators and are not listed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwizard.core import download_pins, version
from gpuwizard.core.request import SetupRequest
from gpuwizard.core.version import CudaVariant, is_version
from gpuwizard.doctor import redact
from gpuwizard.export import ansible_tasks, bash, words
from gpuwizard.frontends.inputs import InputError, check_path
from gpuwizard.machine import dpkgdb
from gpuwizard.machine.detect import config, kernel, os_release, platform, python_envs
from gpuwizard.recommend import release_pins
from gpuwizard.recommend import table as compat_table
from gpuwizard.recommend.planner import OptionsError, env_path
from gpuwizard.recommend.target import BadInput, parse_driver, parse_python
from gpuwizard.runner import failpoints

TAILS = ("\n", "\r\n", "\r", " ", "\x00", "\u2028", "\x85", "\x1b[0m", "\u202e")
"""What a value must not end with: each was let through by ``$`` or an unanchored match."""
CONTROL_TAILS = ("\n", "\r\n", "\r", "\x00", "\x85", "\x1b[0m")


def raises_not(check: Callable[[str], object], errors: tuple[type[Exception], ...]) -> Callable[[str], bool]:  # fmt: skip
    def accepts(value: str) -> bool:
        try:
            check(value)
        except errors:
            return False
        return True

    return accepts


def by(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda value: pattern.fullmatch(value) is not None


@dataclass(frozen=True)
class Validator:
    name: str
    accepts: Callable[[str], bool]
    valid: st.SearchStrategy[str]
    numeric: bool = False
    """Its digits are read as numbers: a non-ASCII digit must be refused too."""
    tails: tuple[str, ...] = TAILS
    """What may not follow a valid value (a path may end with a space, or hold U+202E)."""


TABLE = functools.cache(compat_table.load_table)


def _env_name(value: str) -> None:
    env_path(SetupRequest(env_name=value))


def _python_minor(value: str) -> None:
    release_pins.check_request(TABLE(), SetupRequest(python=value))


def _branch(value: str) -> None:
    release_pins.check_request(TABLE(), SetupRequest(driver_branch=value))


def _kernel_in_modules(value: str) -> bool:
    return kernel.KERNEL_RELEASE.fullmatch(value) is not None


def _journal_pending(value: str) -> bool:
    return dpkgdb.database("", [value]).journal_pending


def _interesting_module(value: str) -> bool:
    return kernel.parse_proc_modules(f"{value} 16384 0 - Live 0x0\n") == (value,)


def _os_release_line(value: str) -> bool:
    info = os_release.parse_os_release(f"ID=ubuntu\n{value}=x\n")
    return info is not None and value == "VERSION_ID" and info.version_id == "x"


def _boot_id(value: str) -> bool:
    return platform.parse_boot_id(value) == value


VALIDATORS = [
    Validator("env name (planner)", raises_not(_env_name, (OptionsError,)), st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", fullmatch=True)),
    Validator("dotted version", is_version, st.from_regex(r"[0-9]{1,9}(\.[0-9]{1,9}){0,3}", fullmatch=True), numeric=True),
    Validator("CUDA build name", raises_not(CudaVariant.parse, (ValueError,)), st.from_regex(r"cu1[0-3][0-9]", fullmatch=True), numeric=True),
    Validator("--env-python", raises_not(_python_minor, (release_pins.BadInput,)), st.sampled_from(["3.10", "3.11", "3.12", "3.13"]), numeric=True),
    Validator("--driver-branch", raises_not(_branch, (release_pins.BadInput,)), st.sampled_from(["570", "580"]), numeric=True),
    Validator("recommend --driver", raises_not(parse_driver, (BadInput,)), st.from_regex(r"[0-9]{3}(\.[0-9]{1,3}){0,2}", fullmatch=True), numeric=True),
    Validator("recommend --python", raises_not(parse_python, (BadInput,)), st.from_regex(r"3\.[0-9]{1,2}", fullmatch=True), numeric=True),
    Validator("a path on the command line", raises_not(check_path, (InputError,)), st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=20), tails=CONTROL_TAILS),
    Validator("kernel folder in /lib/modules", _kernel_in_modules, st.from_regex(r"[0-9]\.[0-9]{1,2}\.[0-9]-[0-9]{1,3}-(generic|cloud-amd64)", fullmatch=True), numeric=True),
    Validator("dpkg journal file", _journal_pending, st.from_regex(r"[0-9]{1,4}", fullmatch=True), numeric=True),
    Validator("kernel module of interest", _interesting_module, st.sampled_from(["nvidia", "nvidia_uvm", "nouveau", "ib_core"])),
    Validator("os-release key", _os_release_line, st.just("VERSION_ID")),
    Validator("boot_id", _boot_id, st.uuids().map(str)),
    Validator("NVIDIA module file", by(config._NVIDIA_KO), st.sampled_from(["nvidia.ko", "nvidia-current-open.ko.xz", "nvidia-tesla-535.ko"])),
    Validator("python in /usr/bin", by(python_envs._PYTHON), st.from_regex(r"python3\.[0-9]{1,2}", fullmatch=True), numeric=True),
    Validator("torch dist-info", by(python_envs._DIST_INFO), st.from_regex(r"torch-2\.[0-9]{1,2}\.[0-9]\.dist-info", fullmatch=True)),
    Validator("conda python record", by(python_envs._CONDA_PYTHON), st.from_regex(r"python-3\.1[0-4]\.[0-9]-h[0-9a-f]{4}_0\.json", fullmatch=True), numeric=True),
    Validator("compat table version", by(compat_table._VERSION), st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,2}", fullmatch=True), numeric=True),
    Validator("compat table date", by(compat_table._DATE), st.dates().map(str), numeric=True),
    Validator("pinned SHA-256", by(download_pins._HEX64), st.from_regex(r"[0-9a-f]{64}", fullmatch=True)),
    Validator("pinned fingerprint", by(download_pins._FINGERPRINT), st.from_regex(r"[0-9A-F]{40}", fullmatch=True)),
    Validator("environment variable name", by(words.ENV_NAME), st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)),
    Validator("deploy.sh step id", by(bash._STEP_ID), st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)),
    Validator("playbook PyPI pin", by(ansible_tasks._PYPI), st.from_regex(r"pypi:[a-z]{1,8}==[0-9]\.[0-9]{1,2}", fullmatch=True)),
    Validator("failpoint at", by(failpoints._AT), st.from_regex(r"kill@[0-9]{1,3}", fullmatch=True), numeric=True),
    Validator("failpoint sleep", by(failpoints._SLEEP), st.from_regex(r"sleep\([0-9]{1,4}\)", fullmatch=True), numeric=True),
    Validator("no serial number", by(redact._NO_SERIAL), st.sampled_from(["0000", "None", "N/A", "Default"])),
    Validator("Debian kernel flavour", lambda v: version.kernel_flavour(v) is not None, st.from_regex(r"6\.1\.0-[0-9]{1,2}-cloud-amd64", fullmatch=True), numeric=True),
]  # fmt: skip


@pytest.mark.parametrize("validator", VALIDATORS, ids=lambda v: v.name)
@settings(deadline=None, max_examples=40)  # a loaded machine: 200 ms per example is not the point
@given(data=st.data())
def test_a_validator_refuses_anything_after_a_valid_value(
    validator: Validator, data: st.DataObject
) -> None:
    value = data.draw(validator.valid)
    assert validator.accepts(value), value
    tail = data.draw(st.sampled_from(validator.tails))
    if validator.name == "boot_id" and tail.isspace() and tail not in "\u2028\x85":
        return  # boot_id is read from a file: surrounding whitespace is the file's, not the id's
    assert not validator.accepts(value + tail), repr(value + tail)


@pytest.mark.parametrize("validator", [v for v in VALIDATORS if v.numeric], ids=lambda v: v.name)
@settings(deadline=None, max_examples=40)
@given(data=st.data())
def test_a_numeric_validator_refuses_digits_that_are_not_ascii(
    validator: Validator, data: st.DataObject
) -> None:
    value = data.draw(validator.valid)
    digits = [i for i, c in enumerate(value) if c.isdigit()]
    if not digits:
        return
    at = data.draw(st.sampled_from(digits))
    other = data.draw(st.sampled_from(["٣", "३", "²", "𝟑", "３"]))
    assert not validator.accepts(value[:at] + other + value[at + 1 :])


def test_the_reported_case_plans_no_environment_with_a_newline() -> None:
    with pytest.raises(OptionsError, match="environment name 'pytorch\\\\n'"):
        env_path(SetupRequest(env_name="pytorch\n"))


def test_a_huge_version_number_is_not_a_version() -> None:
    """int() refuses a 4,300-digit string outright (a traceback before)."""
    assert not is_version("9" * 5000)
    with pytest.raises(ValueError, match="not a dotted version"):
        version.Version.parse("9" * 5000)


def test_a_kernel_folder_with_a_carriage_return_is_no_kernel() -> None:
    assert not kernel.KERNEL_RELEASE.fullmatch("5.15.0-126-generic\rx; touch${IFS}PWNED; #")
    assert version.kernel_sort_key("5.15.²") == ((5, ""), (15, ""), (-1, "²"))
