"""Bounded-time fuzzing of every file loader (issue 39, "make it stay fixed").

Hypothesis edits a valid file of each format (cybpe's JSON, .tiktoken, HF tokenizer.json, the
GPT-2 pair, transformers configs, JSON, binary and compressed chunk counts) with byte flips,
insertions of hostile fragments (NaN, lone-surrogate escapes, huge ids, BOMs, CRLF, giant runs)
and cuts; every load must give a usable object or a cybpe error within a time bound.

The budget: ``CYBPE_FUZZ_SECONDS`` seconds per format (default 4) and at most
``CYBPE_FUZZ_EXAMPLES`` examples (default 300). Slow: CI runs it as its own stage
(``.ci/stage-fuzz.sh``) besides the full run; the default run leaves it out.
"""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from support import HOSTILE_KINDS as KINDS, check_loads as _check, hostile_format_files, loader_of as _loader

SECONDS = float(os.environ.get("CYBPE_FUZZ_SECONDS", "4"))
EXAMPLES = int(os.environ.get("CYBPE_FUZZ_EXAMPLES", "300"))

FRAGMENTS = [b"NaN", b"-Infinity", b"1e999", b"\\ud800", b"\\udfff\\ud800", b"18446744073709551616",
             b"-1", b"\xef\xbb\xbf", b"\r\n", b"\0", b"\xff", b"\"", b"{", b"]", b",", b":", b" ",
             b"A" * 4096, b"=" * 3, b"\n\n", b"null", b"[]", b"{}", b"\"\"", b"\\u0000"]

edit = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 30), st.integers(0, 7)),
    st.tuples(st.just("insert"), st.integers(0, 1 << 30), st.sampled_from(FRAGMENTS)),
    st.tuples(st.just("insert"), st.integers(0, 1 << 30), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.integers(0, 1 << 30), st.integers(1, 64)),
    st.tuples(st.just("cut"), st.integers(0, 1 << 30), st.just(0)),
)


def _apply(data: bytes, edits: list) -> bytes:
    out = bytearray(data)
    for op, at, arg in edits:
        at = at % (len(out) + 1)
        if op == "flip" and out:
            out[at % len(out)] ^= 1 << arg
        elif op == "insert":
            out[at:at] = arg
        elif op == "delete":
            del out[at:at + arg]
        elif op == "cut":
            del out[at:]
    return bytes(out)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return hostile_format_files(tmp_path_factory.mktemp("formats"))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_fuzz_loaders(files, tmp_path_factory, kind):
    pytest.importorskip("zstandard") if kind == "counts-zstd" else None
    data = files[kind].read_bytes()
    load = _loader(kind, files)
    folder = tmp_path_factory.mktemp(f"fuzz-{kind}")
    stop = time.monotonic() + SECONDS
    ran = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(edits=st.lists(edit, min_size=1, max_size=4))
    def one(edits):
        if time.monotonic() > stop:
            return  # the budget is spent: the remaining examples pass at once
        ran.append(1)
        failures = _check(load, {repr(edits)[:200]: _apply(data, edits)}, folder)
        assert not failures, failures

    one()
    assert ran, "no example ran"
