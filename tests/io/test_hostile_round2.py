"""The hostile suite, round two (issue 39): structure-aware mutations of every file format.

Where tests/io/test_hostile_files.py cuts and flips bytes blindly, these mutations follow each
format's structure: JSON documents lose, repeat or change each key (huge and negative ids, NaN and
Infinity, lone-surrogate escapes, wrong types, giant strings); line formats lose, repeat and
reorder lines (duplicate ranks, negative and huge ranks); every file is also cut at its
structural boundaries, emptied, given a BOM, CRLF line ends or one giant line; binary and
compressed counts files are cut at each section boundary and get flipped bytes inside their
compressed streams. Every load must give a tokenizer (or counts) that can be used and saved, or a
cybpe error, within a time bound: never another exception, never a hang.

Non-regular inputs and outputs of every loader and writer, and fork-with-threads for the public
types, are in test_io_reliability_round2.py and tests/api/test_api_reliability_round2.py; the
bounded-time hypothesis fuzzer over the same loaders is test_fuzz_round2.py (CI stage
.ci/stage-fuzz.sh).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any, Iterator

import pytest

from cybpe.errors import CybpeError
from support import HOSTILE_KINDS, check_loads, hostile_format_files, loader_of

HOSTILE_VALUES: list[Any] = [None, True, -1, 0, 2**31, 2**63, 2**64, 10**30, -(2**63) - 1, 1.5,
                             float("nan"), float("inf"), float("-inf"), "", "\ud800", "x" * 100_000,
                             [], [None], {}, {"a": -1}]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    return hostile_format_files(tmp_path_factory.mktemp("formats"))


_loader, _check = loader_of, check_loads


# ------------------------------------------------------------------ mutations


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield prefix, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3] + value[-2:] if len(value) > 5 else value):
            index = i if i < 3 or len(value) <= 5 else len(value) - 5 + i
            yield from _paths(v, prefix + (index,))


def _replaced(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(doc))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=True, allow_nan=True).encode()


def _text_mutations(data: bytes, rng: random.Random) -> dict[str, bytes]:
    """Mutations any text file gets: empty, BOM, CRLF, a giant line, cuts at boundaries."""
    out = {"empty": b"", "bom": b"\xef\xbb\xbf" + data, "crlf": data.replace(b"\n", b"\r\n"),
           "cr": data.replace(b"\n", b"\r"), "no final newline": data.rstrip(b"\n"),
           "giant line": data + b"A" * 1_000_000 + b"\n",
           "giant line first": b"A" * 1_000_000 + b"\n" + data, "nul": data.replace(b" ", b"\0", 3),
           "not utf-8": data[:len(data) // 2] + b"\xff\xfe" + data[len(data) // 2:]}
    boundaries = [i for i, b in enumerate(data) if b in b'{}[],:"\n ']
    for i in sorted(rng.sample(boundaries, min(40, len(boundaries)))):
        out[f"cut at {i}"] = data[:i]
        out[f"cut after {i}"] = data[:i + 1]
    return out


def json_mutations(data: bytes, seed: int) -> dict[str, bytes]:
    rng = random.Random(seed)
    doc = json.loads(data)
    out = _text_mutations(data, rng)
    if isinstance(doc, dict):
        for key in doc:
            out[f"missing {key}"] = _dumps({k: v for k, v in doc.items() if k != key})
            text = data.decode()
            # duplicate keys: the JSON parsers keep the last one
            out[f"duplicate {key} first"] = ('{"%s": null, ' % key + text.lstrip()[1:]).encode()
            out[f"duplicate {key} last"] = (text.rstrip()[:-1] + ', "%s": -1}' % key).encode()
    all_paths = [p for p, _ in _paths(doc) if p]
    for path in rng.sample(all_paths, min(60, len(all_paths))):
        for value in rng.sample(HOSTILE_VALUES, 5):
            out[f"{path} = {str(value)[:20]}"] = _dumps(_replaced(doc, path, value))
    for path, value in _paths(doc):
        if isinstance(value, list) and value:
            out[f"{path} repeated item"] = _dumps(_replaced(doc, path, value + value[:1]))
            out[f"{path} first item dropped"] = _dumps(_replaced(doc, path, value[1:]))
            out[f"{path} reversed"] = _dumps(_replaced(doc, path, value[::-1]))
        elif isinstance(value, int) and not isinstance(value, bool) and path:
            for v in (-value - 1, value + 2**32, 2**64 + value):
                out[f"{path} = {v}"] = _dumps(_replaced(doc, path, v))
        elif isinstance(value, str) and path and rng.random() < 0.3:
            out[f"{path} lone surrogate"] = _dumps(_replaced(doc, path, value + "\udc80"))
    nan_text = data.replace(b"0", b"NaN", 1)
    out["NaN literal"], out["Infinity literal"] = nan_text, data.replace(b"1", b"-Infinity", 1)
    return out


def line_mutations(data: bytes, seed: int) -> dict[str, bytes]:
    """For .tiktoken ("token rank") and vocab.bpe ("left right") lines."""
    rng = random.Random(seed)
    lines = data.split(b"\n")
    out = _text_mutations(data, rng)
    body = [i for i, line in enumerate(lines) if line.strip() and not line.startswith(b"#")]
    for i in rng.sample(body, min(12, len(body))):
        parts = lines[i].split(b" ")
        other = lines[rng.choice(body)].split(b" ")
        variants = {
            "dropped": None, "repeated": lines[i] + b"\n" + lines[i],
            "first field only": parts[0], "tab": lines[i].replace(b" ", b"\t"),
            "extra field": lines[i] + b" 7", "trailing space": lines[i] + b" ",
            "other's last field": b" ".join(parts[:-1] + other[-1:]),  # duplicate rank / merge
            "negative": b" ".join(parts[:-1] + [b"-" + parts[-1]]),
            "huge": b" ".join(parts[:-1] + [str(2**64 + i).encode()]),
            "not a number": b" ".join(parts[:-1] + [b"x1"]),
            "blank before": b"\n" + lines[i],
        }
        for name, replacement in variants.items():
            new = lines[:i] + ([] if replacement is None else [replacement]) + lines[i + 1:]
            out[f"line {i} {name}"] = b"\n".join(new)
    out["lines shuffled"] = b"\n".join(rng.sample(lines, len(lines)))
    return out


def counts_mutations(data: bytes, seed: int) -> dict[str, bytes]:
    """A binary counts file cut at every section boundary and with flipped bytes throughout
    (inside the compressed stream for compressed files)."""
    rng = random.Random(seed)
    meta_len = int.from_bytes(data[32:40], "little")
    body = 40 + meta_len + (-(40 + meta_len) % 8)
    cuts = {0, 8, 12, 16, 24, 32, 40, 40 + meta_len // 2, 40 + meta_len, body, len(data) - 16,
            len(data) - 8, len(data) - 1}
    cuts |= {body + (len(data) - body) * k // 8 for k in range(1, 8)}
    out = {f"cut at {c}": data[:c] for c in sorted(cuts) if 0 <= c < len(data)}
    positions = list(range(len(data)))
    for at in sorted(rng.sample(positions, min(120, len(positions)))):
        flipped = bytearray(data)
        flipped[at] ^= 1 << rng.randrange(8)
        out[f"bit flip at {at}"] = bytes(flipped)
    for field, offset in (("version", 8), ("compression", 12), ("n", 16), ("arena", 24), ("meta length", 32)):
        for value in (0, 1, 2, 3, 2**32 - 1) if offset < 16 else (0, 1, 2**40, 2**63, 2**64 - 1):
            width = 4 if offset < 16 else 8
            changed = bytearray(data)
            changed[offset:offset + width] = value.to_bytes(width, "little")
            out[f"{field} = {value}"] = bytes(changed)
    out["appended bytes"] = data + b"\0" * 9
    out["doubled"] = data + data
    return out


#: The JSON tokenizer files take 4-11 s each (over a thousand mutations): CI's full run only.
SLOW_KINDS = {"native", "hf", "gpt2-encoder"}
KINDS = HOSTILE_KINDS


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k in SLOW_KINDS else k
                                  for k in KINDS])
def test_structure_aware_mutations(files, tmp_path, kind):
    data = files[kind].read_bytes()
    if kind.startswith("counts-"):
        mutations = counts_mutations(data, seed=len(kind))
    elif kind in ("tiktoken", "gpt2-merges"):
        mutations = line_mutations(data, seed=len(kind))
    else:
        mutations = json_mutations(data, seed=len(kind))
    assert len(mutations) > 40
    failures = _check(_loader(kind, files), mutations, tmp_path)
    assert not failures, f"{len(failures)} of {len(mutations)}: {failures[:6]}"


def test_the_suite_covers_every_format_cybpe_reads(files):
    """A new format in cybpe's table of formats needs a row here."""
    from cybpe.api.load import FORMAT_NAMES

    covered = {"native", "tiktoken", "hf", "gpt2", "transformers"}
    assert set(FORMAT_NAMES) <= covered, sorted(set(FORMAT_NAMES) - covered)
    assert not math.isnan(0.0)  # (NaN mutations above rely on json writing NaN literals)


def test_mutations_reach_the_checks(files, tmp_path):
    """The mutations are not all refused by one early check: many load, many are refused."""
    loaded = refused = 0
    load = _loader("native", files)
    for data in json_mutations(files["native"].read_bytes(), seed=1).values():
        path = tmp_path / "m.json"
        path.write_bytes(data)
        try:
            load(path)
            loaded += 1
        except CybpeError:
            refused += 1
    assert loaded >= 5 and refused >= 50, (loaded, refused)
