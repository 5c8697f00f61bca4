"""Vocabulary file formats: .tiktoken, GPT-2 files, HF tokenizer.json, cybpe's native JSON.

Every converter is checked against a plain reference written here, against the peer library that
reads the same format (tiktoken, tokenizers) and, when the shared folder is present, on the real
vocabularies. Peer-library tests use ``pytest.importorskip``; shared-data tests use the
``shared_dir`` fixture (skipped with a reason when the folder is absent).
"""

from __future__ import annotations

import binascii
import json
import os
import random
import stat
from pathlib import Path

import pytest
import regex

from cybpe.io import atomic as _atomic
from cybpe.io.atomic import atomic_write_bytes, atomic_write_text
from cybpe.formats.bytelevel import BYTE_TO_CHAR, CHAR_TO_BYTE, bytelevel_to_bytes, bytes_to_bytelevel
from cybpe.formats.gpt2 import load_gpt2, save_gpt2
from cybpe.formats.hf import (
    GPT2_PATTERN,
    hf_safe_pattern,
    load_hf_tokenizer_json,
    save_hf_tokenizer_json,
)
from cybpe.formats.native import load_native, save_native
from cybpe.formats.tiktoken import load_tiktoken, save_tiktoken
from cybpe.formats.oniguruma import from_oniguruma, to_oniguruma
from cybpe.encode.encoder import RankEncoder
from cybpe.formats.merges import _is_all_splits, all_splits_merges, canonical_merges
from cybpe.formats.vocab import Vocab
from cybpe.errors import ExportError, FormatError, InvalidParameterError, SaveError
from support import eval_texts, textbook_bpe

SIMPLE_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}{1,3}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
SAMPLE = (
    "The quick brown fox can't jump over 12345 lazy dogs; the dogs don't mind.\n"
    "Über straße, naïve café — 東京 and Москва!  Tabs\tand\r\nnewlines 3.14159 x=y+z.\n"
) * 4


# --------------------------------------------------------------------------- small vocabularies


def _train_small(n_merges: int = 60, seed: int = 0) -> Vocab:
    """A tiny BPE vocabulary over SAMPLE with byte ids in a shuffled order (id != byte value)."""
    rng = random.Random(seed)
    order = list(range(256))
    rng.shuffle(order)
    tokens = [bytes([b]) for b in order]
    index = {t: i for i, t in enumerate(tokens)}
    words = [[index[bytes([c])] for c in w.encode()] for w in regex.findall(SIMPLE_PATTERN, SAMPLE)]
    merges = textbook_bpe(tokens, words, n_merges)
    n = len(tokens)
    return Vocab(tokens, merges, {"<|end|>": n, "<|pad|>": n + 5}, True)


@pytest.fixture(scope="module")
def small() -> Vocab:
    return _train_small()


@pytest.fixture(scope="module")
def small_ranks(small) -> Vocab:
    return Vocab(list(small.tokens), None, dict(small.special_tokens), True)


def _random_texts(count: int, alphabet: str, seed: int, max_len: int = 40) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_len)))
        for _ in range(count)
    ]


# --------------------------------------------------------------------------- ByteLevel


def test_bytelevel_table_follows_the_rule():
    # Reference: printable, non-space Latin-1 characters stand for themselves; the other bytes,
    # in increasing order, take U+0100, U+0101, ...
    shifted = iter(range(0x100, 0x200))
    for b in range(256):
        c = chr(b)
        expected = c if c.isprintable() and not c.isspace() else chr(next(shifted))
        assert BYTE_TO_CHAR[b] == expected
        assert CHAR_TO_BYTE[expected] == b
    assert BYTE_TO_CHAR[ord(" ")] == "Ġ" and BYTE_TO_CHAR[ord("\n")] == "Ċ"
    assert len(set(BYTE_TO_CHAR.values())) == 256


def test_bytelevel_matches_tokenizers():
    pre_tokenizers = pytest.importorskip("tokenizers.pre_tokenizers")
    assert set(pre_tokenizers.ByteLevel.alphabet()) == set(CHAR_TO_BYTE)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    for text in ["hello world\n", "naïve 東京\t\x00\x7f", "\u00ad\u00a0x"]:
        [(mapped, _)] = byte_level.pre_tokenize_str(text)
        assert mapped == bytes_to_bytelevel(text.encode())
        assert bytelevel_to_bytes(mapped) == text.encode()


def test_bytelevel_round_trip_and_rejects_outside_chars():
    rng = random.Random(1)
    for _ in range(200):
        data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 30)))
        assert bytelevel_to_bytes(bytes_to_bytelevel(data)) == data
    for bad in ["a b", "x\n", "€", "\u0144", "Ā\u00ad"]:
        with pytest.raises(ValueError):
            bytelevel_to_bytes(bad)


# --------------------------------------------------------------------------- merges


def _canonical_reference(tokens):
    ids = {t: i for i, t in enumerate(tokens)}
    out = []
    for t, tok in enumerate(tokens):
        if len(tok) < 2:
            continue
        options = [
            (max(ids[tok[:k]], ids[tok[k:]]), k, (ids[tok[:k]], ids[tok[k:]]))
            for k in range(1, len(tok))
            if ids.get(tok[:k], t) < t and ids.get(tok[k:], t) < t
        ]
        out.append(min(options)[2])
    return out


def _all_splits_reference(tokens):
    ids = {t: i for i, t in enumerate(tokens)}
    return [
        pair
        for tok in tokens
        for pair in sorted(
            (ids[tok[:k]], ids[tok[k:]])
            for k in range(1, len(tok))
            if tok[:k] in ids and tok[k:] in ids
        )
    ]


@pytest.mark.parametrize("seed", range(4))
def test_merge_lists_match_references(seed):
    vocab = _train_small(n_merges=80, seed=seed)
    assert canonical_merges(vocab.tokens) == _canonical_reference(vocab.tokens)
    rng = random.Random(seed)
    for _ in range(5):
        multi = vocab.tokens[256:]
        rng.shuffle(multi)  # ids no longer follow creation order
        tokens = vocab.tokens[:256] + multi
        assert all_splits_merges(tokens) == _all_splits_reference(tokens)
        # the C version the HF loader uses to recognise an all-splits merge list
        assert RankEncoder(tokens, None).all_splits().tolist() == [list(p) for p in _all_splits_reference(tokens)]
        assert _is_all_splits(tokens, _all_splits_reference(tokens))
        assert not _is_all_splits(tokens, _all_splits_reference(tokens)[:-1])
        try:
            expected = _canonical_reference(tokens)
        except ValueError:  # some token has no split into two lower ids
            with pytest.raises(FormatError):
                canonical_merges(tokens)
        else:
            assert canonical_merges(tokens) == expected


def test_merge_lists_hand_made():
    tokens = [bytes([b]) for b in range(256)] + [b"abc", b"ab", b"cd", b"bcd", b"abcd"]
    a, b, c, d = b"abcd"
    # "abcd" (260) splits as a|bcd, ab|cd, abc|d: listed by (left id, right id), not position
    assert all_splits_merges(tokens)[-3:] == [(a, 259), (256, d), (257, 258)]
    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"cd", b"abc", b"bcd", b"abcd"]
    # canonical: among splits into lower ids, the smallest max(left, right): abcd -> ab|cd
    assert canonical_merges(tokens) == [(a, b), (c, d), (256, c), (b, 257), (256, 257)]


def test_canonical_merges_refuses_unbuildable_token():
    tokens = [bytes([b]) for b in range(256)] + [b"abc", b"ab"]  # "abc" before its halves
    with pytest.raises(FormatError, match="token id 256"):
        canonical_merges(tokens)


# --------------------------------------------------------------------------- patterns


def _python_isolated_split(pattern: str, text: str) -> list[str]:
    """Matches and the gaps between them, as HF's Split(behavior=Isolated) returns them."""
    out, pos = [], 0
    for m in regex.finditer(pattern, text):
        if m.start() > pos:
            out.append(text[pos : m.start()])
        out.append(m.group())
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def _hf_split(pattern: str, text: str) -> list[str]:
    tokenizers = pytest.importorskip("tokenizers")
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), "isolated")
    return [piece for piece, _ in split.pre_tokenize_str(text)]


def test_hf_safe_pattern_fixes_possessive_interval():
    pytest.importorskip("tokenizers")
    assert _hf_split(r"\p{N}{1,3}+", "12345") == ["12345"]  # Oniguruma: a nested repeat
    assert _hf_split(hf_safe_pattern(r"\p{N}{1,3}+"), "12345") == ["123", "45"]
    assert _python_isolated_split(r"\p{N}{1,3}+", "12345") == ["123", "45"]
    assert hf_safe_pattern(r"\p{N}{1,3}+") == r"(?>\p{N}{1,3})"
    assert hf_safe_pattern(r"a?+b*+c++[x]{2}+(?:ab){1,2}+") == r"a?+b*+c++(?>[x]{2})(?>(?:ab){1,2})"


def _builtin_patterns() -> list[str]:
    from cybpe_pretokenizers import abugida, cl100k, gpt2, llama3, o200k, qwen2

    return [cl100k.PATTERN, o200k.PATTERN, gpt2.PATTERN, gpt2.PATTERN_R50K, llama3.PATTERN,
            qwen2.PATTERN, abugida.PATTERN]


SYNTHETIC_PYTHON_PATTERNS = [
    r"ab$|a|b|[^ab]",  # $: end of text (or before a final newline), not end of line
    r"^a|a+|[^a]",  # ^: start of text only
    r"x\Z|x+|[^x]",
    r"(?s:a.)|.|\n",  # dot-all is (?s) in Python, (?m) in Oniguruma
    r"(?:ab){1,2}+b?|.|\n",
    r"[a-z]{2}+|\s++$|[^a-z]|[a-z]",
    r"\d{2,}+|\D|\d",
]

SYNTHETIC_ONIGURUMA_PATTERNS = [
    r"\p{N}{1,3}+|\D+",
    r"ab$|a|b|[^ab]",
    r"^a|a+|[^a]",
    r"x\Z|x+|[^x]",
    r"x\z|x+|[^x]",
    r"(?m:a.)|.|\n",
    r"\d{2,}+|\D|\d",
]

TRICKY = "aabx12 3\n\n\r\t,.'sSé中Жß١½\u0301-_"
FIXED_TEXTS = ["12345 1234567", "ab\nab", "aa\naa\n", "x\nx\n", "a\nb\n\n", ""]


@pytest.mark.parametrize("index", range(7 + len(SYNTHETIC_PYTHON_PATTERNS)))
def test_to_oniguruma_splits_like_python_regex(index):
    pytest.importorskip("tokenizers")
    patterns = _builtin_patterns() + SYNTHETIC_PYTHON_PATTERNS
    pattern = patterns[index]
    onig = to_oniguruma(pattern)
    texts = _random_texts(300, TRICKY, seed=index) + FIXED_TEXTS
    for text in texts:
        assert _hf_split(onig, text) == _python_isolated_split(pattern, text), (pattern, text)


@pytest.mark.parametrize("pattern", SYNTHETIC_ONIGURUMA_PATTERNS)
def test_from_oniguruma_splits_like_oniguruma(pattern):
    pytest.importorskip("tokenizers")
    python_pattern = from_oniguruma(pattern)
    texts = _random_texts(300, TRICKY, seed=7) + FIXED_TEXTS
    for text in texts:
        assert _python_isolated_split(python_pattern, text) == _hf_split(pattern, text), text


def test_pattern_translation_errors():
    for bad in ["(ab", "ab)", "[ab", "a\\"]:
        with pytest.raises(ExportError):
            hf_safe_pattern(bad)
    with pytest.raises(ExportError, match="flag"):
        hf_safe_pattern(r"(?m)^a")  # Python's multi-line anchors have no one-to-one rewrite


def test_gpt2_pattern_constant_matches_plugin():
    from cybpe_pretokenizers import gpt2

    assert GPT2_PATTERN == gpt2.PATTERN


# --------------------------------------------------------------------------- .tiktoken


def _reference_tiktoken_text(tokens) -> bytes:
    import base64

    return "".join(f"{base64.b64encode(t).decode()} {i}\n" for i, t in enumerate(tokens)).encode()


def test_tiktoken_round_trip_small(tmp_path, small_ranks):
    path = tmp_path / "small.tiktoken"
    save_tiktoken(path, small_ranks)
    assert path.read_bytes() == _reference_tiktoken_text(small_ranks.tokens)
    loaded = load_tiktoken(path)
    assert loaded.tokens == small_ranks.tokens and loaded.merges is None
    assert loaded.special_tokens == {}  # not part of the format
    tiktoken_load = pytest.importorskip("tiktoken.load")
    assert tiktoken_load.load_tiktoken_bpe(str(path)) == {t: i for i, t in enumerate(loaded.tokens)}


def test_tiktoken_save_accepts_merge_vocab_whose_ids_are_ranks(tmp_path, small):
    save_tiktoken(tmp_path / "m.tiktoken", small)
    assert load_tiktoken(tmp_path / "m.tiktoken").tokens == small.tokens
    swapped = list(small.merges)
    swapped[3], swapped[4] = swapped[4], swapped[3]
    with pytest.raises(FormatError, match="merge 4"):
        save_tiktoken(tmp_path / "bad.tiktoken", Vocab(small.tokens, swapped, {}, True))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_tiktoken_real_files_round_trip_byte_identical(shared_dir, tmp_path, name):
    source = shared_dir / "vocab" / f"{name}.tiktoken"
    vocab = load_tiktoken(source)
    assert len(vocab.tokens) == {"cl100k_base": 100256, "o200k_base": 199998}[name]
    tiktoken_load = pytest.importorskip("tiktoken.load")
    ranks = tiktoken_load.load_tiktoken_bpe(str(source))
    assert vocab.tokens == sorted(ranks, key=ranks.__getitem__)
    save_tiktoken(tmp_path / "copy.tiktoken", vocab)
    assert (tmp_path / "copy.tiktoken").read_bytes() == source.read_bytes()


def _expect_format_error(path, loader, *fragments):
    with pytest.raises(FormatError) as info:
        loader(path)
    message = str(info.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_tiktoken_corruption(tmp_path, small_ranks):
    good = _reference_tiktoken_text(small_ranks.tokens)
    lines = good.split(b"\n")
    cases = {
        "truncated": (good[: len(good) // 2 - 3], []),
        "bad_base64": (b"\n".join(lines[:5] + [b"@@@ 5"] + lines[6:]), ["line 6", "base64"]),
        "gap": (b"\n".join(lines[:7] + lines[8:]), ["line 8", "rank"]),
        "duplicate": (b"\n".join(lines[:9] + [lines[2].split()[0] + b" 9"] + lines[10:]),
                      ["line 10", "line 3"]),
        "blank_line": (b"\n".join(lines[:4] + [b""] + lines[4:]), ["line 5"]),
        "three_fields": (b"\n".join(lines[:2] + [lines[2] + b" x"] + lines[3:]), ["line 3"]),
        "plus_rank": (b"\n".join(lines[:2] + [lines[2].replace(b" 2", b" +2")] + lines[3:]),
                      ["line 3"]),
        "json": (b'{"model": {"type": "BPE"}}\n', ["line 1"]),
        "empty": (b"\n\n", ["empty"]),
        "few_bytes": (b"IQ== 0\nIg== 1\n", ["single bytes"]),
    }
    for name, (data, fragments) in cases.items():
        path = tmp_path / f"{name}.tiktoken"
        path.write_bytes(data)
        if name == "truncated":  # cut mid-line: the last line lacks (part of) its rank
            message = _expect_format_error(path, load_tiktoken)
            last_line = data.count(b"\n") + 1
            assert f"line {last_line}:" in message or "single bytes" in message
        else:
            _expect_format_error(path, load_tiktoken, *fragments)
    (tmp_path / "crlf.tiktoken").write_bytes(good.replace(b"\n", b"\r\n") + b"\r\n\r\n")
    assert load_tiktoken(tmp_path / "crlf.tiktoken").tokens == small_ranks.tokens
    _expect_format_error(tmp_path / "missing.tiktoken", load_tiktoken, "cannot read")


# --------------------------------------------------------------------------- GPT-2 files


def test_gpt2_round_trip_small(tmp_path, small, small_ranks):
    enc, bpe = tmp_path / "encoder.json", tmp_path / "vocab.bpe"
    save_gpt2(enc, bpe, small)
    assert bpe.read_text().startswith("#version")
    assert load_gpt2(enc, bpe) == small
    save_gpt2(enc, bpe, small_ranks)
    loaded = load_gpt2(enc, bpe)
    assert loaded.tokens == small_ranks.tokens
    assert loaded.merges == _canonical_reference(small_ranks.tokens)
    assert loaded.special_tokens == small_ranks.special_tokens


def test_gpt2_save_refusals(tmp_path, small):
    enc, bpe = tmp_path / "encoder.json", tmp_path / "vocab.bpe"
    with pytest.raises(FormatError, match="no merge"):
        save_gpt2(enc, bpe, Vocab(small.tokens, small.merges[:-1], {}, True))
    clash = Vocab(small.tokens, small.merges, {bytes_to_bytelevel(small.tokens[300]): 999}, True)
    with pytest.raises(FormatError, match="spelled like"):
        save_gpt2(enc, bpe, clash)
    assert not enc.exists() and not bpe.exists()


def test_gpt2_corruption(tmp_path, small):
    enc, bpe = tmp_path / "encoder.json", tmp_path / "vocab.bpe"
    save_gpt2(enc, bpe, small)
    lines = bpe.read_text().split("\n")
    bad_bpe = tmp_path / "bad.bpe"
    bad_bpe.write_text("\n".join(lines[:4] + ["zzqq zzqq"] + lines[4:]))
    with pytest.raises(FormatError, match=r"bad\.bpe: line 5: 'zzqq'"):
        load_gpt2(enc, bad_bpe)
    bad_bpe.write_text("\n".join(lines[:4] + lines[5:]))  # a merge line lost
    left, right = lines[4].split(" ")
    expected = regex.escape(f"{left + right!r} has that id but no merge")
    with pytest.raises(FormatError, match=expected):
        load_gpt2(enc, bad_bpe)
    assert b"qq" not in small.tokens
    bad_bpe.write_text("\n".join(lines[:3] + ["q q"] + lines[3:]))
    with pytest.raises(FormatError, match="line 4: merge makes"):
        load_gpt2(enc, bad_bpe)
    bad_bpe.write_text("\n".join(lines[:6] + ["onlyone"] + lines[7:]))
    with pytest.raises(FormatError, match="line 7"):
        load_gpt2(enc, bad_bpe)
    encoder = json.loads(enc.read_text())
    del encoder[bytes_to_bytelevel(small.tokens[10])]
    bad_enc = tmp_path / "bad_encoder.json"
    bad_enc.write_text(json.dumps(encoder))
    with pytest.raises(FormatError, match="bad_encoder.json.*id 10 is missing"):
        load_gpt2(bad_enc, bpe)
    bad_enc.write_text(enc.read_text()[:-40])
    with pytest.raises(FormatError, match="bad_encoder.json: invalid JSON at line 1 column"):
        load_gpt2(bad_enc, bpe)
    bad_enc.write_text("[1, 2]")
    with pytest.raises(FormatError, match="not a GPT-2 encoder.json"):
        load_gpt2(bad_enc, bpe)


def test_gpt2_real_files(shared_dir, tmp_path):
    folder = shared_dir / "vocab" / "gpt2"
    enc, bpe = folder / "encoder.json", folder / "vocab.bpe"
    vocab = load_gpt2(enc, bpe)
    assert (len(vocab.tokens), len(vocab.merges)) == (50256, 50000)
    assert vocab.special_tokens == {"<|endoftext|>": 50256} and vocab.ignore_merges
    tiktoken_load = pytest.importorskip("tiktoken.load")
    ranks = tiktoken_load.data_gym_to_mergeable_bpe_ranks(str(bpe), str(enc))
    assert vocab.tokens == sorted(ranks, key=ranks.__getitem__)
    save_gpt2(tmp_path / "encoder.json", tmp_path / "vocab.bpe", vocab)
    assert load_gpt2(tmp_path / "encoder.json", tmp_path / "vocab.bpe") == vocab
    assert (tmp_path / "vocab.bpe").read_bytes() == bpe.read_bytes()


# --------------------------------------------------------------------------- HF tokenizer.json


def test_hf_round_trip_small(tmp_path, small, small_ranks):
    path = tmp_path / "tokenizer.json"
    save_hf_tokenizer_json(path, small, SIMPLE_PATTERN, special_flags={"<|end|>": True})
    vocab, info = load_hf_tokenizer_json(path)
    assert vocab == small
    assert info["special"] == ["<|end|>"] and info["add_prefix_space"] is False
    assert info["pattern"] == SIMPLE_PATTERN and not info["drops_unmatched"]
    save_hf_tokenizer_json(path, small_ranks, SIMPLE_PATTERN)
    vocab, info = load_hf_tokenizer_json(path)
    assert vocab.tokens == small_ranks.tokens and vocab.ignore_merges
    assert vocab.merges == _all_splits_reference(small_ranks.tokens)
    assert info["special"] == ["<|end|>", "<|pad|>"]
    # encode_by_rank: HF must get every split too; ignore_merges is carried over as it is
    by_rank = Vocab(small.tokens, small.merges, small.special_tokens, False, encode_by_rank=True)
    save_hf_tokenizer_json(path, by_rank, SIMPLE_PATTERN, normalizer="NFC")
    vocab, info = load_hf_tokenizer_json(path)
    assert vocab.merges == _all_splits_reference(small.tokens) and not vocab.ignore_merges
    assert info["normalizer"] == "NFC"


def test_hf_export_loads_in_tokenizers_and_matches_tiktoken(tmp_path, small_ranks):
    tokenizers = pytest.importorskip("tokenizers")
    tiktoken = pytest.importorskip("tiktoken")
    path = tmp_path / "tokenizer.json"
    n = len(small_ranks.tokens)
    # Specials right after the vocabulary, then with a gap (which must be pinned in model.vocab).
    for specials in [{"<|end|>": n, "<|pad|>": n + 1}, {"<|end|>": n + 2, "<|pad|>": n}]:
        vocab = Vocab(small_ranks.tokens, None, specials, True)
        save_hf_tokenizer_json(path, vocab, SIMPLE_PATTERN)
        hf = tokenizers.Tokenizer.from_file(str(path))
        assert {name: hf.token_to_id(name) for name in specials} == specials
        assert load_hf_tokenizer_json(path)[0].special_tokens == specials
    ranks = {t: i for i, t in enumerate(small_ranks.tokens)}
    tk = tiktoken.Encoding("small", pat_str=SIMPLE_PATTERN, mergeable_ranks=ranks,
                           special_tokens={})
    alphabet = "the quick brown fox 123 dogs;\n'é東"
    texts = [SAMPLE] + _random_texts(200, alphabet, seed=3, max_len=80)
    for text in texts:
        assert hf.encode(text, add_special_tokens=False).ids == tk.encode_ordinary(text), text
    assert hf.encode("a<|pad|>b", add_special_tokens=False).ids[1] == specials["<|pad|>"]


def _mutated(tmp_path, base: Path, name: str, mutate) -> Path:
    doc = json.loads(base.read_text(encoding="utf-8"))
    mutate(doc)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def test_hf_unsupported_and_corrupt(tmp_path, small):
    base = tmp_path / "base.json"
    save_hf_tokenizer_json(base, small, SIMPLE_PATTERN)
    model = lambda key, value: lambda d: d["model"].__setitem__(key, value)  # noqa: E731
    pre = lambda d: d["pre_tokenizer"]["pretokenizers"]  # noqa: E731
    word = bytes_to_bytelevel(small.tokens[-1])  # made by the last merge, used by none
    cases = {
        "wordpiece": (model("type", "WordPiece"), "model.type"),
        "byte_fallback": (model("byte_fallback", True), "model.byte_fallback"),
        "dropout": (model("dropout", 0.1), "model.dropout"),
        "prefix": (model("continuing_subword_prefix", "##"), "continuing_subword_prefix"),
        "lowercase": (lambda d: d.__setitem__("normalizer", {"type": "Lowercase"}), "normalizer"),
        "whitespace": (lambda d: d.__setitem__("pre_tokenizer", {"type": "Whitespace"}),
                       "pre_tokenizer"),
        "prefix_space": (lambda d: pre(d)[1].__setitem__("add_prefix_space", True),
                         "add_prefix_space"),
        "behavior": (lambda d: pre(d)[0].__setitem__("behavior", "MergedWithPrevious"),
                     "behavior"),
        "decoder": (lambda d: d.__setitem__("decoder", {"type": "WordPiece"}), "decoder"),
        "lstrip": (lambda d: d["added_tokens"][0].__setitem__("lstrip", True),
                   "added_tokens[0].lstrip"),
        "not_bytelevel": (
            lambda d: d["model"].__setitem__(
                "vocab", {(" x" if i == 300 else k): i for k, i in d["model"]["vocab"].items()}
            ),
            "model.vocab entry id 300",
        ),
        "missing_token": (lambda d: d["model"]["vocab"].pop(word), "model.merges["),
        "unknown_merge": (lambda d: d["model"]["merges"].insert(2, "Ā zz"), "model.merges[2]"),
        "no_model": (lambda d: d.pop("model"), "not a Hugging Face tokenizer.json"),
    }
    for name, (mutate, fragment) in cases.items():
        path = _mutated(tmp_path, base, name, mutate)
        message = _expect_format_error(path, load_hf_tokenizer_json, fragment)
        if name == "missing_token":
            assert "makes" in message and word in message
    string_split = _mutated(tmp_path, base, "string_split",
                            lambda d: pre(d)[0].__setitem__("pattern", {"String": " "}))
    _expect_format_error(string_split, load_hf_tokenizer_json, "pretokenizers[0].pattern")
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(base.read_bytes()[:-3000])
    _expect_format_error(truncated, load_hf_tokenizer_json, "invalid JSON at line")
    tiktoken_file = tmp_path / "wrong.tiktoken"
    save_tiktoken(tiktoken_file, Vocab(small.tokens))
    _expect_format_error(tiktoken_file, load_hf_tokenizer_json, "invalid JSON")


def test_hf_accepted_variants(tmp_path, small):
    base = tmp_path / "base.json"
    save_hf_tokenizer_json(base, small, SIMPLE_PATTERN)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    variants = {
        "plain_bytelevel": lambda d: d.__setitem__("pre_tokenizer", byte_level),
        "one_item_sequence": lambda d: d.__setitem__(
            "pre_tokenizer", {"type": "Sequence", "pretokenizers": [byte_level]}
        ),
    }
    for name, mutate in variants.items():
        vocab, info = load_hf_tokenizer_json(_mutated(tmp_path, base, name, mutate))
        assert vocab == small and info["pattern"] == GPT2_PATTERN
    empty = _mutated(tmp_path, base, "empty_normalizers", lambda d: d.__setitem__(
        "normalizer", {"type": "Sequence", "normalizers": []}))
    assert load_hf_tokenizer_json(empty)[1]["normalizer"] is None
    pairs = _mutated(tmp_path, base, "list_merges", lambda d: d["model"].__setitem__(
        "merges", [m.split(" ") for m in d["model"]["merges"]]))
    assert load_hf_tokenizer_json(pairs)[0] == small


@pytest.fixture(scope="module")
def o200k_tokens(shared_dir):
    return load_tiktoken(shared_dir / "vocab" / "o200k_base.tiktoken").tokens


def test_hf_real_files(shared_dir, o200k_tokens):
    folder = shared_dir / "vocab"
    llama, info = load_hf_tokenizer_json(folder / "llama3" / "tokenizer.json")
    counts = (len(llama.tokens), len(llama.special_tokens), len(llama.merges))
    assert counts == (128000, 256, 280147)
    assert llama.ignore_merges and len(info["special"]) == 256 and info["normalizer"] is None
    assert llama.merges == all_splits_merges(llama.tokens)  # Llama-3's merges are all splits
    assert _is_all_splits(llama.tokens, llama.merges)
    qwen, info = load_hf_tokenizer_json(folder / "qwen3" / "tokenizer.json")
    assert (len(qwen.tokens), len(qwen.special_tokens), len(qwen.merges)) == (151643, 26, 151387)
    assert not qwen.ignore_merges and info["normalizer"] == "NFC" and len(info["special"]) == 14
    assert info["pattern"] == (  # Qwen2/3's pattern: no Oniguruma-only syntax
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
        r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
    )
    gpt4o, info = load_hf_tokenizer_json(folder / "gpt4o-hf" / "tokenizer.json")
    assert gpt4o.tokens == o200k_tokens
    assert gpt4o.special_tokens == {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
    assert info["drops_unmatched"]  # Split(Removed, invert): only the matches are kept
    # one merge per multi-byte token, in id order (the split chosen differs from ours)
    made = [gpt4o.tokens[a] + gpt4o.tokens[b] for a, b in gpt4o.merges]
    ours = [o200k_tokens[a] + o200k_tokens[b] for a, b in canonical_merges(o200k_tokens)]
    assert made == ours


def _corpus_slices(shared_dir, size=100_000):
    return eval_texts(shared_dir, size)


def test_hf_export_parity_cl100k(shared_dir, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    tiktoken = pytest.importorskip("tiktoken")
    from cybpe_pretokenizers import cl100k

    vocab = load_tiktoken(shared_dir / "vocab" / "cl100k_base.tiktoken")
    save_hf_tokenizer_json(tmp_path / "cl100k.json", vocab, cl100k.PATTERN)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "cl100k.json"))
    ranks = {t: i for i, t in enumerate(vocab.tokens)}
    tk = tiktoken.Encoding("cl100k", pat_str=cl100k.PATTERN, mergeable_ranks=ranks,
                           special_tokens={})
    for name, text in _corpus_slices(shared_dir) + [("digits", "1234567 12345 x 9876543210\n")]:
        assert hf.encode(text, add_special_tokens=False).ids == tk.encode_ordinary(text), name


def test_hf_export_parity_gpt2(shared_dir, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    tiktoken = pytest.importorskip("tiktoken")
    from cybpe_pretokenizers import gpt2

    folder = shared_dir / "vocab" / "gpt2"
    vocab = load_gpt2(folder / "encoder.json", folder / "vocab.bpe")
    save_hf_tokenizer_json(tmp_path / "gpt2.json", vocab, gpt2.PATTERN_R50K)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "gpt2.json"))
    ranks = {t: i for i, t in enumerate(vocab.tokens)}
    tk = tiktoken.Encoding("gpt2", pat_str=gpt2.PATTERN_R50K, mergeable_ranks=ranks,
                           special_tokens={})
    for name, text in _corpus_slices(shared_dir, 50_000):
        assert hf.encode(text, add_special_tokens=False).ids == tk.encode_ordinary(text), name


# --------------------------------------------------------------------------- native


SPEC = {"name": "regex", "params": {"pattern": SIMPLE_PATTERN}}


def test_native_round_trip(tmp_path, small, small_ranks):
    path = tmp_path / "tok.json"
    by_rank = Vocab(small.tokens, small.merges, small.special_tokens, False, encode_by_rank=True)
    for vocab in (small, small_ranks, by_rank):
        save_native(path, vocab, SPEC, {"trained_on": "SAMPLE", "n": 3})
        assert load_native(path) == (vocab, SPEC, {"trained_on": "SAMPLE", "n": 3})
    doc = json.loads(path.read_text())
    assert doc["format"] == "cybpe-tokenizer" and doc["version"] == 1
    assert [binascii.a2b_base64(t) for t in doc["tokens"]] == small_ranks.tokens
    save_native(path, small, SPEC)
    assert load_native(path)[2] == {}


def test_native_real_vocab(shared_dir, tmp_path, o200k_tokens):
    vocab = Vocab(o200k_tokens, None, {"<|endoftext|>": 199999}, True)
    save_native(tmp_path / "o200k.json", vocab, {"name": "o200k"})
    assert load_native(tmp_path / "o200k.json")[0] == vocab


def test_native_corruption(tmp_path, small):
    base = tmp_path / "base.json"
    save_native(base, small, SPEC, {})

    def variant(name, mutate):
        doc = json.loads(base.read_text())
        mutate(doc)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        return path

    _expect_format_error(variant("newer", lambda d: d.__setitem__("version", 3)),
                         load_native, "format version 3", "reads versions 1..2")
    _expect_format_error(variant("kind", lambda d: d.__setitem__("format", "other")),
                         load_native, "not a cybpe tokenizer file")
    _expect_format_error(variant("b64", lambda d: d["tokens"].__setitem__(7, "a$b=")),
                         load_native, "tokens[7]")
    _expect_format_error(variant("merges", lambda d: d.__setitem__("merges", [[1, "x"]])),
                         load_native, "merges")
    _expect_format_error(variant("unknown_id", lambda d: d["merges"].append([1, 99999])),
                         load_native, "unknown id")
    _expect_format_error(variant("flag", lambda d: d.__setitem__("ignore_merges", 1)),
                         load_native, "ignore_merges")
    lines = base.read_text().split("\n")
    truncated = tmp_path / "truncated.json"
    truncated.write_text("\n".join(lines[: len(lines) // 2]))
    _expect_format_error(truncated, load_native, f"line {len(lines) // 2}", "column")
    hf_file = tmp_path / "tokenizer.json"
    save_hf_tokenizer_json(hf_file, small, SIMPLE_PATTERN)
    _expect_format_error(hf_file, load_native, "not a cybpe tokenizer file")
    _expect_format_error(tmp_path / "absent.json", load_native, "cannot read")
    with pytest.raises(InvalidParameterError):
        save_native(tmp_path / "x.json", small, SPEC, {"bad": object()})
    assert not (tmp_path / "x.json").exists()


# --------------------------------------------------------------------------- atomic saves


def _all_savers(tmp_path, small):
    return {
        "tiktoken": lambda p: save_tiktoken(p, small),
        "gpt2": lambda p: save_gpt2(p, tmp_path / "side.bpe", small),
        "hf": lambda p: save_hf_tokenizer_json(p, small, SIMPLE_PATTERN),
        "native": lambda p: save_native(p, small, SPEC),
    }


@pytest.mark.parametrize("failing", ["replace", "fsync", "write"])
def test_failed_save_keeps_old_file_and_leaves_no_temp(tmp_path, monkeypatch, small, failing):
    class Boom(OSError):
        pass

    def boom(*args, **kwargs):
        raise Boom("simulated failure")

    for name, save in _all_savers(tmp_path, small).items():
        target = tmp_path / f"{name}.out"
        target.write_bytes(b"old contents")
        before = sorted(os.listdir(tmp_path))
        with monkeypatch.context() as patch:
            if failing == "write":
                class HalfWriter:
                    def __init__(self, handle):
                        self.handle = handle

                    def __enter__(self):
                        return self

                    def __exit__(self, *exc):
                        self.handle.close()

                    def write(self, data):
                        self.handle.write(data[: len(data) // 2])
                        raise Boom("disk full")

                def half_fdopen(fd, mode, real_fdopen=os.fdopen):
                    return HalfWriter(real_fdopen(fd, mode))

                patch.setattr(_atomic.os, "fdopen", half_fdopen)
            else:
                patch.setattr(_atomic.os, failing, boom)
            with pytest.raises(SaveError) as caught:  # naming the destination, not the temporary file
                save(target)
            assert isinstance(caught.value.__cause__, Boom)
            assert str(caught.value).startswith(str(tmp_path)) and ".cybpe-tmp" not in str(caught.value)
        assert target.read_bytes() == b"old contents", name
        assert sorted(os.listdir(tmp_path)) == before, name


def test_atomic_write_modes(tmp_path):
    fresh = tmp_path / "fresh.txt"
    atomic_write_text(fresh, "hé\n")
    assert fresh.read_bytes() == "hé\n".encode()
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask
    private = tmp_path / "private.bin"
    private.write_bytes(b"x")
    private.chmod(0o600)
    atomic_write_bytes(private, b"new")
    assert private.read_bytes() == b"new" and stat.S_IMODE(private.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.txt", "private.bin"]
