"""How gpuwizard starts a Python: isolated, so that nothing in the caller's folder is imported.

``python -m X`` and ``python -c S`` put the current folder first on ``sys.path``: run as root in a
folder another user can write, a planted ``argparse.py`` or ``pip/`` would run as root. Every
Python gpuwizard starts (its runner and downloader, pip, venv, the verify script, the benchmark,
the simulation's stand-ins) gets ``-I``: no current folder, no ``PYTHON*`` variables, no user
site-packages; and it starts in ``/`` or a folder of gpuwizard's own. Only gpuwizard's own
interpreter may need less: where gpuwizard itself is importable only through ``PYTHONPATH`` or
the user's site-packages, which ``-I`` hides, it gets ``-P`` (Python 3.11+: the current folder
alone left out) and relies on the safe working folder. Pure: it reads this interpreter's own
settings, never the machine.
"""

from __future__ import annotations

import functools
import os
import site
import sys
from collections.abc import Sequence
from pathlib import Path

ISOLATED = "-I"
"""For every Python gpuwizard starts but its own: the target environment's, the system's."""
SAFE_PATH = "-P"
"""Python 3.11+: leave the current folder (and the script's) off ``sys.path``, nothing else."""
SAFE_CWD = "/"
"""The working folder of every process gpuwizard starts where no folder of its own fits."""


def flags_for(
    import_root: str,
    hidden_by_isolation: Sequence[str],
    version: tuple[int, int],
) -> tuple[str, ...]:
    """The flags that isolate a Python which must still import gpuwizard from ``import_root``.

    ``hidden_by_isolation``: the folders ``-I`` takes off ``sys.path`` (PYTHONPATH's entries,
    the user's site-packages). Pure, so both sides of the choice are tested.
    """
    root = os.path.realpath(import_root)
    hidden = [os.path.realpath(folder) for folder in hidden_by_isolation if folder]
    if not any(root == folder or root.startswith(folder + os.sep) for folder in hidden):
        return (ISOLATED,)
    return (SAFE_PATH,) if version >= (3, 11) else ()


def _hidden_by_isolation() -> list[str]:
    hidden = []
    if not sys.flags.ignore_environment:
        hidden += os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if site.ENABLE_USER_SITE:
        hidden.append(site.getusersitepackages())
    return hidden


@functools.cache
def own_flags() -> tuple[str, ...]:
    """The isolation flags for this interpreter starting one of gpuwizard's own modules."""
    import_root = str(Path(__file__).absolute().parents[2])  # the folder holding gpuwizard/
    return flags_for(import_root, _hidden_by_isolation(), sys.version_info[:2])


def own_python(*args: str) -> tuple[str, ...]:
    """argv that runs this interpreter, isolated, with ``args`` (``"-m", "gpuwizard.x"``)."""
    return (sys.executable, *own_flags(), *args)
