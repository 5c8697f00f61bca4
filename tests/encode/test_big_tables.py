"""The encoder's big hash tables sit in huge pages where Linux offers them (big_table_alloc, _c/system.pxd).

Each check runs in a child process, so the process's huge-page count before and after the load
is the tables' alone. The speed this buys is in bench/ (docs/performance.md), not here.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support import HANG_GUARD_SECONDS

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _thp_mode() -> str | None:
    """The bracketed mode of transparent huge pages (always / madvise / never), None off Linux."""
    try:
        text = THP.read_text()
    except OSError:
        return None
    return text[text.index("[") + 1:text.index("]")]


def _run(code: str, tmp_path) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=HANG_GUARD_SECONDS, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# 256 bytes and all 65,536 byte pairs: the token table has 2^17 slots or more (megabytes).
VOCAB = """
    import random
    import cybpe
    tokens = [bytes([b]) for b in range(256)] + [bytes([a, b]) for a in range(256) for b in range(256)]
    def huge_mb():
        with open("/proc/self/smaps_rollup") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("AnonHugePages")) // 1024
"""


@pytest.mark.skipif(_thp_mode() in (None, "never"), reason="no transparent huge pages here (Linux "
                    "with /sys/kernel/mm/transparent_hugepage/enabled set to always or madvise)")
def test_token_tables_take_huge_pages(tmp_path):
    out = _run(VOCAB + """
    before = huge_mb()
    tok = cybpe.Tokenizer(cybpe.Vocab(tokens, None, {}, True), "cl100k")
    print(huge_mb() - before)
    """, tmp_path)
    assert int(out) >= 2


def test_tables_in_huge_pages_encode_and_free(tmp_path):
    # Loads and frees of tables of 2 MiB and more (mapped, then unmapped by big_table_free), each
    # encoder checked against the pure-Python reference on words of random letters.
    out = _run(VOCAB + """
    from cybpe.reference.encoder import reference_encode
    rng = random.Random(7)
    for round in range(4):
        tok = cybpe.Tokenizer(cybpe.Vocab(tokens, None, {}, True), "cl100k")
        words = ["".join(chr(rng.randrange(97, 123)) for _ in range(rng.randrange(1, 40)))
                 for _ in range(300)]
        text = " ".join(words)
        ids = tok.encode_ordinary(text)
        pieces = [p.encode() for p in tok.pretokenizer.split(text)]
        assert ids == reference_encode(pieces, tokens), round
        assert tok.decode(ids) == text
        del tok
    print("ok")
    """, tmp_path)
    assert out == "ok"
