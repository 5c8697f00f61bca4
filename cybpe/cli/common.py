"""What every sub-command of the command line shares: its error type, progress choice and loader.

The sub-command modules (``main``, ``bench``, ``counts``) import from here and never from each
other's internals, so the command line's imports run one way: main -> bench/counts -> common.
"""

from __future__ import annotations

import sys
from typing import Any, Optional


class CliError(Exception):
    """A user error found by the command line itself (printed as one line)."""


def show_progress(args: Any) -> bool:
    """Whether to draw a progress bar: never with ``--quiet``, always with ``--progress``, else
    when stderr is a terminal."""
    if getattr(args, "quiet", False):
        return False
    return True if getattr(args, "progress", False) else sys.stderr.isatty()


def load_tokenizer(path: str, pretokenizer: Optional[str] = None):
    """A tokenizer from any file :func:`cybpe.load` reads; ``pretokenizer`` overrides the one the
    file implies (needed for ``.tiktoken`` files of encodings cybpe does not know)."""
    from cybpe.api.load import load

    return load(path, pretokenizer=pretokenizer)
