"""Where test material lives. Material outside the repo is found through one setting, ``CYBPE_SHARED``."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR = Path(__file__).parent / "data"

SKIP_REASON = (
    "the shared corpora/vocabularies are absent (set CYBPE_SHARED to the folder that holds "
    "corpora/ and vocab/; a plain clone has only tests/data)"
)


def shared_path() -> Path | None:
    """``$CYBPE_SHARED``, else ``../shared`` next to the repository; None when absent."""
    configured = os.environ.get("CYBPE_SHARED")
    path = Path(configured) if configured else Path(__file__).resolve().parents[2] / "shared"
    return path if path.is_dir() else None
