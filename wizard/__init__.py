"""gpuwizard: set up a fresh Linux GPU server for PyTorch, step by confirmed step."""

from __future__ import annotations

__version__ = "0.1.0"
