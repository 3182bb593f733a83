"""What the person asked for: every wish declared once, in one pure value.

Each field of ``SetupRequest`` is a wish: its type and default, and in the field's metadata its
``Wish``: the command-line flag and help, the label the Choose view shows and how, the values it
may take and the check of its form. The command line's options (wizard/frontends/cliargs.py), the
Choose view's selects, inputs and checkboxes (screens/choose.py), answers.yaml's ``request``
block (whose keys are the field names), the check of an answers file and the differences between
two requests (``differences``) are all made from these declarations: a new wish is one field here
plus its effect in the engine or the planner.

The request is the only input the engine, the planner and the exporters take from a person,
whichever front end took it. Pure: no I/O and no table (whether a pinned release exists, or fits
a host, is the engine's business: wizard/recommend/release_pins.py and host_pins.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from typing import Any, Literal, get_args

from gpuwizard.core.version import is_cuda_variant, is_version

Flavor = Literal["open", "proprietary"]
EnvKind = Literal["venv", "conda"]
Widget = Literal["select", "input", "check", "none"]
"""How the Choose view offers a wish: a list of values, a text field, a checkbox, or not at all."""
Group = Literal["pins", "environment", "parts"]
"""Where a wish belongs: what the engine picks, where PyTorch goes, what else is installed."""


class RequestError(ValueError):
    """A wish with a value of the wrong form; one line naming it (as the caller names it)."""


@dataclass(frozen=True)
class Wish:
    """One thing a person may ask for, as every front end and file shows it."""

    flag: str
    """The command-line option ("--driver-branch"); a wish that is on by default is turned off
    by its flag ("--no-persistence")."""
    label: str
    """The Choose view's label ("Driver branch")."""
    help: str
    """One line for ``--help``: what it does, and the default."""
    group: Group
    widget: Widget
    metavar: str | None = None
    values: tuple[str, ...] = ()
    """The values a choice may take (open, proprietary); empty: any of the right form."""
    form: Callable[[str], str | None] | None = None
    """Why a text value has the wrong form (None: it is fine)."""
    engine: bool = False
    """The engine reads it: ``recommend`` takes it (the others say where, and what else)."""
    tried: bool = False
    """The Choose view tries each value the host offers with the engine: a value that cannot
    work here is explained, not offered."""
    holds: tuple[str, ...] = ()
    """Wishes held at what the recommendation resolved them to while this one's values are
    tried (a CUDA build belongs to a release)."""
    auto: str = "recommended"
    """How the Choose view names "let gpuwizard pick" (the value None)."""
    shown_as: str = "{}"
    """How a value reads in the Choose view ("R{}" for a driver branch)."""
    name: str = ""
    """The field's name: the answers.yaml key and the request's attribute (set by ``WISHES``)."""

    @property
    def dest(self) -> str:
        """argparse's attribute for the flag."""
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def turns_off(self) -> bool:
        """The flag turns the wish off (it is on by default)."""
        return self.flag.startswith("--no-")


def wish(default: Any, **declared: Any) -> Any:
    """A request field with its declaration (``Wish``'s fields, without the name)."""
    return field(default=default, metadata={"wish": Wish(**declared)})


_TORCH_FORM = "expected a version like 2.14.1, a series like 2.5, or latest"
_ENV_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_BRANCH = re.compile(r"[0-9]{3,4}")
_MINOR = re.compile(r"3\.[0-9]{1,2}")


def _torch_form(value: str) -> str | None:
    return (
        None if value == "latest" or (is_version(value) and value == value.strip()) else _TORCH_FORM
    )


def _variant_form(value: str) -> str | None:
    return None if is_cuda_variant(value) else "expected a CUDA build name like cu126 or cu130"


def _branch_form(value: str) -> str | None:
    return None if _BRANCH.fullmatch(value) else "expected a driver branch number like 580"


def _python_form(value: str) -> str | None:
    return None if _MINOR.fullmatch(value) else "expected a Python version like 3.11"


def _env_path_form(value: str) -> str | None:
    if value.startswith("/") and "\n" not in value and len(value) <= 4096:
        return None
    return "expected the absolute path of an environment that has PyTorch (detect lists them)"


def _env_name_form(value: str) -> str | None:
    if _ENV_NAME.fullmatch(value):
        return None
    return "use letters, digits, '.', '_' or '-' (at most 64), starting with a letter or digit"


@dataclass(frozen=True)
class SetupRequest:
    """Every wish; None lets gpuwizard pick. Field order is the order people read them in."""

    torch: str | None = wish(
        None, flag="--torch", metavar="VERSION", label="PyTorch", group="pins", widget="select",
        help="a PyTorch release (2.14.1), a series (2.5) or latest (default: the newest whose "
        "whole set is confirmed)",
        form=_torch_form, engine=True, auto="latest (confirmed)",
    )  # fmt: skip
    """A release ("2.14.1"), a series ("2.5"), "latest" or None (the same)."""
    variant: str | None = wish(
        None, flag="--variant", metavar="cuXYZ", label="CUDA build", group="pins",
        widget="select", help="the CUDA build of PyTorch, e.g. cu126 (default: the engine picks)",
        form=_variant_form, engine=True, tried=True, holds=("torch",),
    )  # fmt: skip
    driver_branch: str | None = wish(
        None, flag="--driver-branch", metavar="BRANCH", label="Driver branch", group="pins",
        widget="select", help="the NVIDIA driver branch to install, e.g. 580",
        form=_branch_form, engine=True, tried=True, shown_as="R{}",
    )  # fmt: skip
    driver_flavour: Flavor | None = wish(
        None, flag="--kernel-modules", label="Kernel modules", group="pins", widget="select",
        values=get_args(Flavor), engine=True, tried=True,
        help="the driver's kernel modules: open or proprietary (where the GPUs allow both)",
    )  # fmt: skip
    python: str | None = wish(
        None, flag="--env-python", metavar="X.Y", label="Python", group="pins", widget="select",
        help="the environment's Python: the OS's python3 or one its archive packages, e.g. 3.11",
        form=_python_form, engine=True, tried=True, shown_as="Python {}",
    )  # fmt: skip
    keep_driver: bool = wish(
        False, flag="--keep-driver", label="Keep driver", group="pins",
        widget="check", engine=True,
        help="never change the NVIDIA driver already installed (its CUDA decides the build)",
    )  # fmt: skip
    needs_nvcc: bool = wish(
        False, flag="--needs-nvcc", label="CUDA toolkit (nvcc)", group="parts", widget="check",
        engine=True,
        help="also install the CUDA toolkit (nvcc) of the PyTorch build, to compile extensions",
    )  # fmt: skip
    use_env: str | None = wish(
        None, flag="--use-env", metavar="PATH", label="PyTorch here", group="environment",
        widget="select", form=_env_path_form, engine=True, auto="no: a new environment",
        help="use the PyTorch already in the environment at PATH (detect lists them): verify, "
        "benchmark and export it, download nothing, keep the driver",
    )  # fmt: skip
    """An existing environment's prefix (``TorchEnv.path``); None: set up a new one."""
    env_kind: EnvKind = wish(
        "venv", flag="--env", label="Environment", group="environment", widget="select",
        values=get_args(EnvKind),
        help="the Python environment: a venv (default) or a conda env under Miniforge",
    )  # fmt: skip
    env_name: str = wish(
        "pytorch", flag="--env-name", metavar="NAME", label="Environment name",
        group="environment", widget="input", form=_env_name_form,
        help="the environment's name: /opt/gpuwizard/envs/NAME, or Miniforge's envs/NAME "
        "(default: pytorch)",
    )  # fmt: skip
    cudnn: bool = wish(
        False, flag="--cudnn", label="cuDNN 9", group="parts", widget="check",
        help="also install cuDNN 9 from NVIDIA's repository (PyTorch's wheels bring their own)",
    )  # fmt: skip
    docker: bool = wish(
        False, flag="--docker", label="Docker + NVIDIA toolkit", group="parts", widget="check",
        help="also install Docker and the NVIDIA Container Toolkit, for GPU containers",
    )  # fmt: skip
    dcgm: bool = wish(
        False, flag="--dcgm", label="DCGM monitoring", group="parts", widget="check",
        help="also install DCGM, NVIDIA's GPU health and metrics service",
    )  # fmt: skip
    nccl: bool = wish(
        False, flag="--nccl", label="NCCL multi-node settings", group="parts", widget="check",
        help="also write NCCL settings for training across several servers",
    )  # fmt: skip
    hold_driver: bool = wish(
        False, flag="--hold-driver", label="Hold driver packages", group="parts",
        widget="check", help="hold the driver's packages, so an OS upgrade never changes them",
    )  # fmt: skip
    persistence: bool = wish(
        True, flag="--no-persistence", label="Persistence mode", group="parts", widget="check",
        help="leave nvidia-persistenced off (default: on, so the GPUs stay initialised)",
    )  # fmt: skip

    @property
    def pinned(self) -> bool:
        """Any wish differs from the defaults."""
        return self != SetupRequest()

    def value(self, name: str) -> object:
        return getattr(self, name)

    def changed(self, name: str, value: object) -> SetupRequest:
        """This request with one wish set; ValueError for a name or choice that is no wish's."""
        declared = wish_named(name)
        if declared.values and value is not None and value not in declared.values:
            raise ValueError(f"{declared.flag}: {value!r} is not one of {declared.values}")
        changes: dict[str, Any] = {name: value}
        return replace(self, **changes)


def _declared(spec: Field[Any]) -> Wish:
    declared: Wish = spec.metadata["wish"]
    return replace(declared, name=spec.name)


WISHES: tuple[Wish, ...] = tuple(_declared(f) for f in fields(SetupRequest))
"""Every wish, in the request's field order."""
_BY_NAME: Mapping[str, Wish] = {w.name: w for w in WISHES}


def wish_named(name: str) -> Wish:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"{name!r} is not a wish") from None


def form_problem(declared: Wish, value: object) -> str | None:
    """Why ``value`` has not the form ``declared`` takes; None when it has (or is not text)."""
    if not isinstance(value, str):
        return None
    if declared.values and value not in declared.values:
        return f"expected {' or '.join(declared.values)}"
    return declared.form(value) if declared.form else None


def check_form(request: SetupRequest, name_of: Callable[[Wish], str] = lambda w: w.flag) -> None:
    """Every wish's value has its form; RequestError names the first that does not
    (``name_of``: how the caller names a wish, a flag or an answers key)."""
    for declared in WISHES:
        value = request.value(declared.name)
        if (why := form_problem(declared, value)) is not None:
            raise RequestError(f"{name_of(declared)} {value!r}: {why}")


def _said(value: object) -> str:
    match value:
        case None:
            return "not given"
        case bool():
            return "on" if value else "off"
        case _:
            return repr(value)


def differences(run: SetupRequest, asked: SetupRequest) -> list[str]:
    """Each wish where ``asked`` differs from the request ``run`` was made from, as
    "--flag: the run in progress has X, this command asks Y"."""
    return [
        f"{w.flag}: the run in progress has {_said(run.value(w.name))}, "
        f"this command asks {_said(asked.value(w.name))}"
        for w in WISHES
        if run.value(w.name) != asked.value(w.name)
    ]
