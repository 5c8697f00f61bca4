"""Shared fixtures (paths live in ``support.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import SKIP_REASON, shared_path


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    path = shared_path()
    if path is None:
        pytest.skip(SKIP_REASON)
    return path
