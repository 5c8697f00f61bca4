"""Corrupt, truncated and mistyped files of every format: each load works or raises a cybpe error.

For every format cybpe reads (its own JSON, ``.tiktoken``, HF ``tokenizer.json``, the GPT-2
pair, chunk counts) a valid file is written, then damaged in many ways: cut at many lengths,
bytes flipped, emptied, replaced by a folder, not UTF-8, nested 100,000 deep, and (for JSON) every
field replaced by values of every JSON type. Pickled state is damaged field by field the same way.
"""

from __future__ import annotations

import copy
import json
import pickle
import random

import pytest

import cybpe
from cybpe.errors import CybpeError
from support import write_every_format

TEXT = "Hello world, the quick brown fox. 12345 jumps! Ünïcödé 中文 🙂\n  done. " * 10

#: Values of every JSON type (and some that are wrong for any field).
JSON_VALUES = [None, True, -1, 0, 2**64, 1.5, "", "x", [], [None], [[1, 2], [3]], {}, {"a": 1},
               [[[[[[[[]]]]]]]]]


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.fixture(scope="module")
def tok() -> cybpe.Tokenizer:
    return cybpe.train([TEXT], 320, special_tokens=["<|eot|>"], progress=False)


def _outcome(load, path) -> str | None:
    try:
        load(path)
    except CybpeError:
        return None
    except Exception as exc:  # noqa: BLE001 - the point of the test
        return f"{type(exc).__name__}: {str(exc)[:160]}"
    return None


def _damaged(data: bytes, seed: int) -> dict[str, bytes]:
    """Many damaged versions of ``data``, by name."""
    rng = random.Random(seed)
    out = {"empty": b"", "one-byte": data[:1], "not-utf8": b"\xff\xfe\x00garbage\x80",
           "deep": _deep(100_000).encode(), "nul": b"\x00" * 64,
           "doubled": data + data, "crlf": data.replace(b"\n", b"\r\n")}
    for k in range(1, 25):
        out[f"cut-{k}"] = data[: len(data) * k // 25]
    for k in range(30):
        flipped = bytearray(data)
        position = rng.randrange(len(flipped))
        flipped[position] = rng.choice(b'"{}[],:0123456789 \n\\x\xff')
        out[f"flip-{k}@{position}"] = bytes(flipped)
    lines = data.split(b"\n")
    if len(lines) > 4:
        for k in range(5):
            i = rng.randrange(len(lines))
            out[f"drop-line-{i}"] = b"\n".join(lines[:i] + lines[i + 1:])
            out[f"dup-line-{i}"] = b"\n".join(lines[:i] + [lines[i]] + lines[i:])
    return out


def _field_variants(doc, path=()):
    """(description, document) with one field (at any depth up to 3) replaced by each JSON value."""
    if len(path) >= 3:
        return
    keys = list(doc)[:12] if isinstance(doc, dict) else range(min(len(doc), 3)) if isinstance(doc, list) else []
    for key in keys:
        for value in JSON_VALUES:
            changed = copy.deepcopy(doc)
            changed[key] = value
            yield f"{'/'.join(map(str, path + (key,)))}={json.dumps(value)[:20]}", changed
        if isinstance(doc, dict) or key == 0:
            for description, inner in _field_variants(doc[key], path + (key,)):
                changed = copy.copy(doc)
                changed[key] = inner
                yield description, changed
    if isinstance(doc, dict):
        for key in list(doc)[:12]:
            removed = {k: v for k, v in doc.items() if k != key}
            yield f"{'/'.join(map(str, path))}-without-{key}", removed


def _shrink(doc):
    """The document with its long arrays and objects cut (so that each variant loads fast)."""
    if isinstance(doc, list):
        return [_shrink(x) for x in doc[:300]]
    if isinstance(doc, dict):
        return {k: _shrink(v) for k, v in list(doc.items())[:400]}
    return doc


def _formats(tok, folder):
    """name -> (file written from ``tok``, load function of a path)."""
    paths = write_every_format(tok, folder, TEXT)
    merges, encoder = paths["gpt2-merges"], paths["gpt2-encoder"]
    return {
        "native": (paths["native"], cybpe.Tokenizer.load),
        "tiktoken": (paths["tiktoken"], lambda p: cybpe.Tokenizer.from_tiktoken(p, "cl100k", {})),
        "hf": (paths["hf"], cybpe.Tokenizer.from_hf),
        "gpt2-encoder": (encoder, lambda p: cybpe.Tokenizer.from_gpt2(p, merges)),
        "gpt2-merges": (merges, lambda p: cybpe.Tokenizer.from_gpt2(encoder, p)),
        "chunk-counts": (paths["counts"], cybpe.ChunkCounts.load),
    }


FORMAT_NAMES = ["native", "tiktoken", "hf", "gpt2-encoder", "gpt2-merges", "chunk-counts"]


@pytest.mark.parametrize("name", FORMAT_NAMES)
def test_damaged_bytes(name, tok, tmp_path):
    path, load = _formats(tok, str(tmp_path))[name]
    assert _outcome(load, path) is None  # the intact file loads
    load(path)
    data = open(path, "rb").read()
    failures = []
    for label, damaged in _damaged(data, seed=FORMAT_NAMES.index(name)).items():
        bad = tmp_path / f"bad-{label}"
        bad.write_bytes(damaged)
        problem = _outcome(load, bad)
        if problem:
            failures.append(f"{name} {label}: {problem}")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for label, target in (("folder", folder), ("missing", tmp_path / "missing")):
        problem = _outcome(load, target)
        if problem:
            failures.append(f"{name} {label}: {problem}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", ["native", "hf", "gpt2-encoder", "chunk-counts"])
def test_mistyped_json_fields(name, tok, tmp_path):
    path, load = _formats(tok, str(tmp_path))[name]
    doc = _shrink(json.loads(open(path, encoding="utf-8").read()))
    failures = []
    for k, (label, changed) in enumerate(_field_variants(doc)):
        bad = tmp_path / f"variant-{k}.json"
        bad.write_text(json.dumps(changed))
        problem = _outcome(load, bad)
        if problem:
            failures.append(f"{name} {label}: {problem}")
    assert not failures, "\n".join(failures[:60])


def test_damaged_pickled_state(tok):
    counts = cybpe.ChunkCounts("cl100k", ["<|eot|>"]).update([TEXT])
    failures = []
    for obj in (tok, counts):
        state = obj.__getstate__()
        variants = [(f"{key}={value!r}"[:40], {**state, key: value})
                    for key in state for value in JSON_VALUES + [object(), b"\xff"]]
        variants += [(f"without {key}", {k: v for k, v in state.items() if k != key}) for key in state]
        variants += [("not a dict", value) for value in JSON_VALUES]
        for label, changed in variants:
            fresh = type(obj).__new__(type(obj))
            problem = _outcome(fresh.__setstate__, changed)
            if problem:
                failures.append(f"{type(obj).__name__} {label}: {problem}")
        assert pickle.loads(pickle.dumps(obj)) == obj
    assert not failures, "\n".join(failures)
