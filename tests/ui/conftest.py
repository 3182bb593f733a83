"""Fixtures shared by the TUI tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private state folder, and a simulated benchmark that does not pace itself."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setenv("GPUWIZARD_SIM_BENCH_PACE", "0")
    return tmp_path
