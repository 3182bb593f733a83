"""Running the installed ``gpuwizard`` command the way a person does, with a private state home."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def gpuwizard(
    home: Path, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``gpuwizard ARGS`` with XDG_STATE_HOME=home (and cwd=home unless given); never paced;
    ``env`` adds variables."""
    env = {
        "PATH": "/usr/bin:/bin",
        "XDG_STATE_HOME": str(home),
        "GPUWIZARD_SIM_BENCH_PACE": "0",
        **(env or {}),
    }
    env.update((k, v) for k, v in os.environ.items() if k.startswith("COVERAGE_"))  # measured in CI
    return subprocess.run(
        [sys.executable, "-m", "gpuwizard", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or home,
        timeout=120,
        check=False,
    )
