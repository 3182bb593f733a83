"""Ask the configured Python package index which PyTorch releases exist (``recommend --online``).

Only through pip, so the user's index configuration (a mirror, a proxy) applies and no host is
hard-coded; gpuwizard's own pip, isolated (``-I``, started in ``/``), so a ``pip`` folder planted
where the command was typed never runs. The answer is advisory: a release newer than the
compatibility table is reported, never recommended, until its builds are confirmed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuwizard.core.isolation import own_python
from gpuwizard.machine.host import CommandRunner


@dataclass(frozen=True)
class IndexAnswer:
    package: str
    versions: tuple[str, ...]
    error: str | None = None


def parse_pip_index_versions(text: str) -> tuple[str, ...]:
    """``pip index versions torch`` prints "Available versions: 2.15.0, 2.14.1, ..."."""
    match = re.search(r"^Available versions:\s*(.+)$", text, re.MULTILINE)
    if not match:
        return ()
    return tuple(
        v.strip()
        for v in match.group(1).split(",")
        if re.fullmatch(r"[0-9]{1,18}(\.[0-9]{1,18})*", v.strip())
    )


def query_index(run: CommandRunner, package: str = "torch") -> IndexAnswer:
    out = run([*own_python("-m", "pip"), "index", "versions", package], timeout_s=60)
    versions = parse_pip_index_versions(out.stdout)
    if out.returncode != 0 or not versions:
        detail = (out.stderr or out.stdout).strip().splitlines()
        return IndexAnswer(package, (), detail[-1] if detail else f"pip exited {out.returncode}")
    return IndexAnswer(package, versions)
