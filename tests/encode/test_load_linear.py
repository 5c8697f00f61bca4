"""Loading costs time linear in the vocabulary's bytes, whatever its longest token (issue 39, 1).

Each load runs in a child process with a generous time limit: the limit is a hang guard, not a
speed claim (before the length check in collect_all_splits, a 1 MB token took minutes to load:
every split of it hashed both halves). The speed itself is in bench/test_bench_load.py.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import textwrap

import pytest

HANG_GUARD_SECONDS = 120


def _run(code: str, tmp_path) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=HANG_GUARD_SECONDS, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("size", [64_000, 1_000_000])
def test_a_long_token_loads_and_encodes(tmp_path, size):
    out = _run(f"""
        import cybpe
        tokens = [bytes([b]) for b in range(256)] + [b"qq", b"q" * {size}]
        tok = cybpe.Tokenizer(cybpe.Vocab(tokens, None, {{}}, True), "cl100k")
        assert tok.encode_ordinary("q" * {size}) == [257]
        assert tok.encode_ordinary("q" * 5) == [256, 256, ord("q")]
        assert tok.decode([257]) == "q" * {size}
        print("ok")
    """, tmp_path)
    assert out == "ok"


def test_a_tiktoken_file_with_a_one_megabyte_line_loads(tmp_path):
    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"abc", b"z" * 1_000_000]
    path = tmp_path / "long.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens)))
    out = _run(f"""
        import cybpe
        tok = cybpe.Tokenizer.from_tiktoken({str(path)!r}, pretokenizer="cl100k")
        assert tok.encode_ordinary("z" * 1_000_000) == [258]
        assert tok.encode_ordinary("abc ab") == [257, ord(" "), 256]
        print("ok")
    """, tmp_path)
    assert out == "ok"
