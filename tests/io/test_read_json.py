"""read_json: orjson where it gives what the json module gives, the json module for the rest.

The reference is the json module itself (``_parsed_by_orjson`` switched off): every result and
every error message must be the same either way.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cybpe.errors import FormatError
from cybpe.io import atomic
from cybpe.io.atomic import read_json
from support import examples, shared_path

orjson = pytest.importorskip("orjson", reason="orjson is a core dependency; without it only json runs")


def _reference(path, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(atomic, "_parsed_by_orjson", lambda data: (False, None))
        try:
            return "value", read_json(path)
        except FormatError as exc:
            return "error", str(exc)


def _both(path, monkeypatch):
    try:
        got = "value", read_json(path)
    except FormatError as exc:
        got = "error", str(exc)
    return got, _reference(path, monkeypatch)


def _same(a, b) -> bool:
    """Equal, with NaN equal to itself and -0.0 told from 0.0 (json's own distinctions)."""
    if isinstance(a, float) and isinstance(b, float):
        return (a != a and b != b) or (a == b and str(a) == str(b))
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


HOSTILE = [
    b'{"a": 1, "a": 2}', b"1e400", b"-1e400", b"NaN", b"[Infinity]", b'"\\ud800"', b'"\\udfff x"',
    b"123456789012345678901234567890", b"-9223372036854775809", b"18446744073709551616",
    b"9223372036854775807", b'{"n": 1234567890123456789}', b'"1234567890123456789"',
    b"-0", b"-0.0", b"[1.5e-400]", b"0.1", b"1E5", b"\xef\xbb\xbf[1]", b"\xef\xbb\xbf\xef\xbb\xbf[]",
    b" [ ] ", b"[1,]", b"{", b"", b"\xff[]", b'["\xc3"]', b'"a\tb"', b'"\\u0000"', b"\x0c[]",
    b"[" * 2000 + b"]" * 2000, b"[" * 100 + b"]" * 100, b'{"a": [1, 2.5, "x", null, true, false]}',
    b'"\\ud83d\\ude00"', b"[1] [2]", b"01", b"[.5]", b"\"\xed\xa0\x80\"",
]


@pytest.mark.parametrize("data", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_json_reads_as_the_json_module_reads_it(tmp_path, monkeypatch, data):
    path = tmp_path / "x.json"
    path.write_bytes(data)
    (kind, got), (ref_kind, ref) = _both(path, monkeypatch)
    assert kind == ref_kind
    assert _same(got, ref) if kind == "value" else got == ref


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None)
@given(JSON_VALUES, st.booleans())
def test_random_documents_read_as_the_json_module_reads_them(tmp_path_factory, value, ascii_only):
    path = tmp_path_factory.mktemp("j") / "x.json"
    path.write_bytes(json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        (kind, got), (ref_kind, ref) = _both(path, monkeypatch)
    assert kind == ref_kind
    assert _same(got, ref) if kind == "value" else got == ref


def test_the_fast_path_is_taken_on_plain_json(tmp_path):
    """Not a silent fall-back everywhere: orjson parses an ordinary document."""
    parsed, value = atomic._parsed_by_orjson(b'{"vocab": {"a": 0, "b": 1}, "merges": ["a b"]}')
    assert parsed and value == {"vocab": {"a": 0, "b": 1}, "merges": ["a b"]}
    assert atomic._parsed_by_orjson(b"[12345678901234567890]") == (False, None)


def test_shared_tokenizer_files_read_the_same(monkeypatch):
    shared = shared_path()
    if shared is None:
        pytest.skip("needs $CYBPE_SHARED/vocab (the Llama 3, Qwen3 and GPT-4o tokenizer.json files)")
    for name in ("llama3", "qwen3", "gpt4o-hf"):
        path = shared / "vocab" / name / "tokenizer.json"
        assert atomic._parsed_by_orjson(path.read_bytes())[0], name
        (kind, got), (_, ref) = _both(path, monkeypatch)
        assert kind == "value" and got == ref, name
