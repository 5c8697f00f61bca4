"""What the CLI tests share: a small tokenizer trained once through the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import UDHR_DIR, run_cli


@pytest.fixture(scope="session")
def trained(tmp_path_factory) -> Path:
    """A 700-token abugida tokenizer with ``<|endoftext|>``, trained by ``cybpe train`` on the
    English, Hindi and Thai UDHR samples (tests read it, never write it)."""
    path = tmp_path_factory.mktemp("tok") / "udhr.json"
    run_cli("train", UDHR_DIR / "en.txt", UDHR_DIR / "hi.txt", UDHR_DIR / "th.txt", "--vocab-size", 700,
            "--pretokenizer", "abugida", "--special", "<|endoftext|>", "-o", path, "-q")
    return path
