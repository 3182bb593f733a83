"""Fixtures for the benchmark worker: a Python that can import torch."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest


@pytest.fixture(scope="session")
def torch_python() -> str:
    """GPUWIZARD_TORCH_PYTHON, else this Python when it has torch; otherwise skip (fail in CI)."""
    chosen = os.environ.get("GPUWIZARD_TORCH_PYTHON")
    if chosen:
        return chosen
    if importlib.util.find_spec("torch") is not None:
        return sys.executable
    if os.environ.get("GPUWIZARD_CI"):
        pytest.fail("no Python with torch: set GPUWIZARD_TORCH_PYTHON")
    pytest.skip("no Python with torch: set GPUWIZARD_TORCH_PYTHON")
