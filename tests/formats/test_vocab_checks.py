"""The loaders' compiled whole-list passes (cybpe/formats/vocab_checks.pyx) against the Python
loops they stand in for: the same answer on real files, and on hostile lists the compiled pass
gives up exactly where the Python loop raises (so every error still names its line)."""

from __future__ import annotations

import json

import pytest

from cybpe.errors import FormatError
from cybpe.formats import hf
from cybpe.formats.bytelevel import BYTE_TO_CHAR, bytelevel_to_bytes, bytes_to_bytelevel
from cybpe.formats.merges import all_splits_merges, canonical_merges
from cybpe.formats.vocab import Vocab
from cybpe.formats.vocab_checks import TokenIndex, bytelevel_tokens

HF_FILES = ["llama3", "qwen3", "gpt4o-hf"]


def small_vocab() -> tuple[list[bytes], list[str], dict[str, int]]:
    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"bc", b"abc", b" a", b"\n\n", b"\xe4\xb8"]
    strings = [bytes_to_bytelevel(t) for t in tokens]
    return tokens, strings, {s: i for i, s in enumerate(strings)}


def python_merge_ids(lines, ids):
    try:
        return hf._read_merges_line_by_line("x", lines, ids)
    except FormatError:
        return None


def python_merges_valid(tokens, merges):
    try:
        Vocab(list(tokens), merges).validate()
    except FormatError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("name", HF_FILES)
def test_real_files_parse_alike(shared_dir, name):
    doc = json.loads((shared_dir / "vocab" / name / "tokenizer.json").read_text(encoding="utf-8"))
    ids = doc["model"]["vocab"]
    lines = doc["model"]["merges"]
    tokens_by_id = sorted(ids, key=ids.get)
    tokens = [bytelevel_to_bytes(s) for s in tokens_by_id]
    assert bytelevel_tokens(tokens_by_id) == tokens
    index = TokenIndex.of(tokens)
    fast = index.merge_line_ids(lines)
    assert fast is not None and fast == hf._read_merges_line_by_line("x", lines, ids)
    assert index.merges_valid(fast)
    assert all(index.id_of(t) == i for i, t in enumerate(tokens))
    # Llama 3's list is every split; the others are one merge per token.
    assert index.is_all_splits(fast) == (name == "llama3") == (fast == all_splits_merges(tokens))


HOSTILE_LINES = [
    ["zz b"],                  # an unknown token
    ["a c"],                   # the join "ac" is not a token
    ["ab"],                    # no space
    ["a b c"],                 # two spaces
    ["a\x00 b"],               # a character outside the ByteLevel alphabet
    ["abcabcabcabc d"],        # longer than any token
    [" a"],                    # empty left half
    ["a "],                    # empty right half
    ["a", "b c d"],            # bad lines whose halves would pair up if split as a whole
    [["a", "c"]],              # list form, join not a token
    [["a"]], [["a", "b", "c"]], [[1, 2]], [("a", "b")], [None], [7], [b"a b"],
    [["a", "b"], "a c"],       # mixed forms, one bad
]


@pytest.mark.parametrize("lines", HOSTILE_LINES, ids=repr)
def test_hostile_lines_give_up_where_python_raises(lines):
    tokens, _, ids = small_vocab()
    assert python_merge_ids(lines, ids) is None
    assert TokenIndex.of(tokens).merge_line_ids(lines) is None


def test_good_lines_in_both_forms():
    tokens, strings, ids = small_vocab()
    index = TokenIndex.of(tokens)
    lines = ["a b", "ab c", "Ġ a", "Ċ Ċ", f"{strings[0xE4]} {strings[0xB8]}", "a bc"]
    as_lists = [line.split(" ") for line in lines]
    for form in (lines, as_lists, lines[:2] + as_lists[2:]):
        fast = index.merge_line_ids(form)
        assert fast is not None and fast == python_merge_ids(form, ids)
    assert index.merge_line_ids([]) == []


HOSTILE_MERGES = [
    [(97, 98)], [(256, 99)], [(32, 97)], [(10, 10)], [(0xE4, 0xB8)],   # good ones
    [(97, 99)],            # the join is not a token
    [(97, 300)], [(-1, 97)], [(97, 2**70)], [(97.0, 98)], [(True, 98)], [("a", "b")],
    [(97,)], [(97, 98, 99)], [[97, 98]], [None], [(97, 98), (98, 97)],
]


@pytest.mark.parametrize("merges", HOSTILE_MERGES, ids=repr)
def test_merge_check_agrees_with_the_python_loop(merges):
    """The compiled check says "all valid" only where the Python loop accepts the list (it may
    give up on a list the loop accepts -- a bool id -- and the loop then decides)."""
    tokens, _, _ = small_vocab()
    fast = TokenIndex.of(tokens).merges_valid(merges)
    slow = python_merges_valid(tokens, merges)
    assert fast == slow or (not fast and slow and any(type(x) is bool for m in merges for x in m))


def test_validate_still_names_the_bad_merge():
    tokens, _, _ = small_vocab()
    with pytest.raises(FormatError, match=r"merge 1 \(97, 99\) produces bytes that are not a token"):
        Vocab(tokens, [(97, 98), (97, 99)]).validate()
    with pytest.raises(FormatError, match="token ids 97 and 262 have the same bytes"):
        Vocab(tokens + [b"a"]).validate()
    with pytest.raises(FormatError, match="token id 262 is empty"):
        Vocab(tokens + [b""]).validate()


def test_is_all_splits():
    tokens, _, _ = small_vocab()
    index = TokenIndex.of(tokens)
    splits = all_splits_merges(tokens)
    assert len(splits) > len(tokens) - 256 and index.is_all_splits(splits)
    assert not index.is_all_splits(splits[::-1])
    assert not index.is_all_splits(splits[:-1])
    assert not index.is_all_splits(splits + [splits[-1]])
    assert not index.is_all_splits([(a, b + 1) for a, b in splits])
    assert not index.is_all_splits([[a, b] for a, b in splits])
    assert not index.is_all_splits(canonical_merges(tokens))
    assert TokenIndex.of([bytes([b]) for b in range(256)]).is_all_splits([])


def test_token_index_declines_bad_token_lists():
    tokens, _, _ = small_vocab()
    assert TokenIndex.of(tokens) is not None and TokenIndex.of([]) is not None
    for bad in (tokens + [b"a"], tokens + [b""], tokens + ["a"], tokens + [bytearray(b"zz")]):
        assert TokenIndex.of(bad) is None
    assert TokenIndex.of([b"a", b"b"]).missing_bytes() == [b for b in range(256) if b not in b"ab"]
    index = TokenIndex.of(tokens)
    assert index.id_of(b"abc") == tokens.index(b"abc") and index.id_of(b"abcd") == -1
    assert index.missing_bytes() == []


def test_bytelevel_tokens_against_the_python_decoder():
    every_byte = "".join(BYTE_TO_CHAR[b] for b in range(256))
    good = ["a", "Ġ", every_byte, "", "ĊĊ", every_byte[::-1]]
    assert bytelevel_tokens(good) == [bytelevel_to_bytes(t) for t in good]
    assert bytelevel_tokens([]) == []
    for bad in ("a\x00b", " ", "é\u0144", "\U0001F600", "\u00ad"):  # outside the alphabet
        with pytest.raises(ValueError):
            bytelevel_to_bytes(bad)
        assert bytelevel_tokens(["a", bad]) is None
    assert bytelevel_tokens(["a", b"a"]) is None


def test_hf_loader_still_names_a_bad_vocab_entry(tmp_path, shared_dir):
    doc = json.loads((shared_dir / "vocab" / "qwen3" / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = doc["model"]["vocab"]
    bad_id = vocab.pop("Ġthe")
    vocab["Ġth\x00"] = bad_id
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(FormatError, match=f"model.vocab entry id {bad_id}: character '\\\\x00'"):
        hf.load_hf_tokenizer_json(path)
