"""The Tokenizer API: tiktoken semantics, parity on real text, hostile input, persistence."""

from __future__ import annotations

import functools
import json
import pickle
import random
import time

import numpy as np
import pytest

import cybpe
from cybpe.errors import DisallowedSpecialTokenError, EncodingError, InvalidTokenError
from support import DATA_DIR, HANG_GUARD_SECONDS, UDHR_DIR, shared_path

UDHR = {p.stem: p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))}
CODE = (DATA_DIR / "python_sample.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def trained():
    return cybpe.train(list(UDHR.values()) + [CODE], 4000, "cl100k",
                       special_tokens=["<|endoftext|>", "<|fim|>"], progress=False)


@functools.lru_cache(maxsize=1)
def _eval_texts() -> tuple[tuple[str, str], ...]:
    texts = dict(UDHR, code=CODE)
    shared = shared_path()
    if shared is not None:
        for path in sorted((shared / "corpora" / "eval").rglob("*.txt")):
            texts[str(path.relative_to(shared / "corpora" / "eval"))] = path.read_text(encoding="utf-8")
    return tuple(texts.items())


def eval_texts() -> dict[str, str]:
    """The UDHR samples, the code sample and every evaluation text of the shared corpora (read once)."""
    return dict(_eval_texts())


# -- tiktoken semantics ------------------------------------------------------------------------
def test_special_token_semantics(trained):
    text = "a <|endoftext|> b <|fim|>"
    with pytest.raises(DisallowedSpecialTokenError, match="<\\|endoftext\\|>"):
        trained.encode(text)
    ids = trained.encode(text, allowed_special="all")
    assert trained.special_tokens["<|endoftext|>"] in ids and trained.special_tokens["<|fim|>"] in ids
    ids = trained.encode(text, allowed_special={"<|fim|>"}, disallowed_special=())
    assert trained.special_tokens["<|endoftext|>"] not in ids and ids[-1] == trained.special_tokens["<|fim|>"]
    assert trained.encode(text, disallowed_special=()) == trained.encode_ordinary(text)
    with pytest.raises(DisallowedSpecialTokenError):
        trained.encode(text, allowed_special={"<|fim|>"})
    assert trained.count(text) == len(trained.encode_ordinary(text))
    assert trained.decode(trained.encode(text, allowed_special="all")) == text
    # a name that is no special token is ignored, as tiktoken ignores it
    with pytest.raises(DisallowedSpecialTokenError):
        trained.encode(text, allowed_special={"<|nope|>"})
    assert trained.encode("a <|nope|>", allowed_special={"<|nope|>"}) == trained.encode_ordinary("a <|nope|>")


def test_special_semantics_equal_tiktoken(trained):
    tiktoken = pytest.importorskip("tiktoken")
    enc = tiktoken.Encoding("t", pat_str=trained.pretokenizer.pattern, special_tokens=trained.special_tokens,
                            mergeable_ranks={b: i for i, b in enumerate(trained.vocab.tokens)})
    text = "x<|endoftext|>y <|fim|><|endoftext|>"
    for allowed in [set(), {"<|fim|>"}, "all"]:
        assert trained.encode(text, allowed_special=allowed, disallowed_special=()) == \
            enc.encode(text, allowed_special=allowed, disallowed_special=())
    assert trained.encode_ordinary(text) == enc.encode_ordinary(text)


def test_lone_surrogates_become_replacement_chars_like_tiktoken(trained):
    tiktoken = pytest.importorskip("tiktoken")
    enc = tiktoken.Encoding("t", pat_str=trained.pretokenizer.pattern, special_tokens={},
                            mergeable_ranks={b: i for i, b in enumerate(trained.vocab.tokens)})
    for text in ["a\ud800b", "\udfff", "x \ud83d\ude00 y", "\ud83d"]:
        assert trained.encode(text) == enc.encode(text)
    assert trained.decode(trained.encode("a\ud800b")) == "a\ufffdb"


def test_decoding(trained):
    ids = trained.encode("नमस्ते दुनिया, hello")
    assert trained.decode_bytes(ids) == "नमस्ते दुनिया, hello".encode()
    assert b"".join(trained.decode_tokens_bytes(ids)) == trained.decode_bytes(ids)
    with pytest.raises(InvalidTokenError, match="4000"):
        trained.decode([1, 4000])
    with pytest.raises(InvalidTokenError):
        trained.decode([-1])
    stream = trained.stream_decoder()
    pieces = [stream.feed(i) for i in trained.encode("नमस्ते")] + [stream.flush()]
    assert "".join(pieces) == "नमस्ते"
    assert all("\ufffd" not in p for p in pieces)
    # No emoji in the training text: U+1F600 encodes as its four byte tokens, and a cut sequence
    # decodes to one U+FFFD (as bytes.decode(errors="replace") does), the bytes kept as they are.
    emoji = trained.encode("\U0001F600")
    assert [trained.decode_single_token_bytes(i) for i in emoji] == [b"\xf0", b"\x9f", b"\x98", b"\x80"]
    for cut in range(1, 4):
        assert trained.decode_bytes(emoji[:cut]) == "\U0001F600".encode()[:cut]
        assert trained.decode(emoji[:cut]) == "\ufffd"
    ends = trained.encode("a") + emoji[:2] + trained.encode("b")
    assert trained.decode(ends) == "a\ufffdb"
    assert trained.decode(emoji) == "\U0001F600"


def test_batch_numpy_and_threads_agree(trained):
    texts = list(UDHR.values())
    sequential = [trained.encode_ordinary(t) for t in texts]
    assert trained.encode_ordinary_batch(texts, num_threads=2) == sequential
    assert trained.encode_batch(texts, num_threads=2) == sequential
    arr = trained.encode_to_numpy(texts[0])
    assert arr.dtype == np.uint32 and arr.tolist() == sequential[0]


def test_ordinary_batch_one_pass_per_thread_edge_cases(trained):
    """encode_ordinary_batch encodes each thread's slice in GIL-free passes: same ids as one
    encode_ordinary per text on empty texts, lone surrogates (U+FFFD), special-token strings
    (ordinary text), non-ASCII and a single text; a non-str item is a typed error."""
    texts = ["", "plain ascii", "x\ud800y \udfff", "<|endoftext|> as text", "ümlaut 中文 ١٢٣", "",
             CODE[:5000], "a" * 3000]
    sequential = [trained.encode_ordinary(t) for t in texts]
    for threads in (1, 2, 3, 8):
        assert trained.encode_ordinary_batch(texts, num_threads=threads) == sequential
    assert trained.encode_ordinary_batch([texts[2]], num_threads=2) == [sequential[2]]
    assert trained.encode_ordinary_batch([], num_threads=2) == []
    with pytest.raises(EncodingError, match="not bytes"):
        trained.encode_ordinary_batch(["ok", b"bytes"], num_threads=2)


def test_ordinary_batch_in_several_passes_per_thread(trained):
    """A slice longer than GIL_HANDOFF_CHARS is encoded in several passes: the ids and their
    order are those of one encode_ordinary per text, across pass boundaries and thread counts."""
    from cybpe.api.tokenizer import GIL_HANDOFF_CHARS, _groups_of_chars

    texts = [t[: 500 + 997 * i % 9000] for i, t in enumerate(list(UDHR.values()) * 6)]
    texts[5:5] = ["", "x" * (GIL_HANDOFF_CHARS + 3), ""]  # one text longer than a pass, empty ones
    assert sum(map(len, texts)) > 6 * GIL_HANDOFF_CHARS
    groups = list(_groups_of_chars(texts, GIL_HANDOFF_CHARS))
    assert [t for g in groups for t in g] == texts and len(groups) >= 4
    assert all(sum(map(len, g)) >= GIL_HANDOFF_CHARS for g in groups[:-1])
    assert list(_groups_of_chars([], 10)) == [] and list(_groups_of_chars(["", ""], 10)) == [["", ""]]
    sequential = [trained.encode_ordinary(t) for t in texts]
    for threads in (1, 2, 3):
        assert trained.encode_ordinary_batch(texts, num_threads=threads) == sequential


def test_pickle_save_load(trained, tmp_path):
    again = pickle.loads(pickle.dumps(trained))
    assert again == trained and again.encode_ordinary(CODE) == trained.encode_ordinary(CODE)
    trained.save(tmp_path / "t.json")
    loaded = cybpe.Tokenizer.load(tmp_path / "t.json")
    assert loaded == trained
    assert loaded.encode(UDHR["hi"]) == trained.encode(UDHR["hi"])
    assert json.loads((tmp_path / "t.json").read_text())["version"] == 1


def test_bad_input_is_typed(trained):
    with pytest.raises(EncodingError):
        trained.encode(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(InvalidTokenError):
        trained.encode_single_token(b"\xff\xfe\xfd not a token")


def _random_text(seed: int, alphabet: str, size: int = 1_000_000) -> str:
    return "".join(random.Random(seed).choices(alphabet, k=size))


# Built when a test asks (not at collection: every run would pay for the random texts).
PATHOLOGICAL = {
    "a*1M": lambda: "a" * 1_000_000,
    "random-letters-1M": lambda: _random_text(0, "abcdefghijklmnopqrstuvwxyz"),
    "base64-1M": lambda: _random_text(1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"),
    "spaces-then-a": lambda: " " * 1_000_000 + "a",
    "carets": lambda: "^" * 1_000_000,
    "newlines": lambda: "\n" * 1_000_000,
}


@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_pathological_inputs_finish(trained, name):
    """No crash, no recursion limit, no hang (a generous ceiling; timings live in bench/)."""
    text = PATHOLOGICAL[name]()
    started = time.perf_counter()
    ids = trained.encode_ordinary(text)
    assert time.perf_counter() - started < HANG_GUARD_SECONDS  # a hang guard, not a speed check
    assert trained.decode(ids) == text


# -- parity with the reference libraries on real text ----------------------------------------------
def _tiktoken_encoding(shared, name):
    tiktoken = pytest.importorskip("tiktoken")
    import base64

    known = json.loads((shared / "vocab" / "tiktoken_encodings.json").read_text())[name]
    ranks = {}
    for line in (shared / "vocab" / f"{name}.tiktoken").read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    from cybpe_pretokenizers import cl100k, o200k

    pattern = {"cl100k_base": cl100k.PATTERN, "o200k_base": o200k.PATTERN}[name]
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=known["special_tokens"])


def _unicode14(text: str) -> str:
    """Keep code points Python 3.11's Unicode 14 tables assign (tiktoken's tables are no newer).
    (The distinct characters are checked, then one ``translate`` drops the unassigned ones: a
    per-character loop over the eval corpora took most of these tests' time.)"""
    import unicodedata

    drop = {ord(c): None for c in set(text) if ord(c) >= 0x80 and unicodedata.category(c) == "Cn"}
    return text.translate(drop) if drop else text


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_ids_equal_tiktoken_on_real_text(shared_dir, name):
    enc = _tiktoken_encoding(shared_dir, name)
    tok = cybpe.Tokenizer.from_tiktoken(shared_dir / "vocab" / f"{name}.tiktoken")
    for label, text in eval_texts().items():
        text = _unicode14(text)
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), label
        assert tok.decode(tok.encode_ordinary(text)) == text


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_ids_equal_tiktoken_on_fuzzed_text(shared_dir, name):
    enc = _tiktoken_encoding(shared_dir, name)
    tok = cybpe.Tokenizer.from_tiktoken(shared_dir / "vocab" / f"{name}.tiktoken")
    rng = random.Random(5)
    alphabet = list(" \t\n\r\x0b\x0c\x85\xa0\u2028\u3000aAzZ'sStTlLdDmM019_./-!?ſKǅि्ก็中😀\u200d🏽١½") + ["'ll", "'VE", "\r\n"]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        try:
            expected = enc.encode_ordinary(text)
        except BaseException:  # tiktoken's PanicException derives from BaseException  # noqa: B036
            continue
        assert tok.encode_ordinary(text) == expected, repr(text)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["llama3", "qwen3", "gpt4o-hf"])
def test_ids_equal_hf_tokenizers(shared_dir, model):
    tokenizers = pytest.importorskip("tokenizers")
    path = shared_dir / "vocab" / model / "tokenizer.json"
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = cybpe.Tokenizer.from_hf(path)
    for label, text in eval_texts().items():
        text = _unicode14(text)[:150_000]  # HF is slow; a slice of every file
        assert tok.encode_ordinary(text) == hf.encode(text, add_special_tokens=False).ids, (model, label)


@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt2", "llama3", "qwen2", "abugida", "gpt4-digits-rtl"])
def test_compiled_path_equals_regex_path(trained, name):
    """The fused scanner+encoder pass gives the ids of regex split + encoder, on hostile text too."""
    fast = cybpe.Tokenizer(trained.vocab, name)
    slow = cybpe.Tokenizer(trained.vocab, cybpe.get_pretokenizer(name).with_regex_only())
    assert fast.pretokenizer.uses_scanner and not slow.pretokenizer.uses_scanner
    rng = random.Random(9)
    alphabet = list(" \t\n\r\x0b\x85\xa0\u3000aZ'sSlLtT019_./-ſि्ก็中😀\u200d١½") + ["\ud800", "\r\n", "1234567"]
    texts = list(UDHR.values()) + [CODE] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
                                           for _ in range(500)]
    for text in texts:
        assert fast.encode_ordinary(text) == slow.encode_ordinary(text), repr(text[:60])


def test_ids_equal_tiktoken_gpt2(shared_dir):
    tiktoken = pytest.importorskip("tiktoken")
    from cybpe.formats.bytelevel import bytelevel_to_bytes
    from cybpe_pretokenizers import gpt2

    gpt2_dir = shared_dir / "vocab" / "gpt2"
    tok = cybpe.Tokenizer.from_gpt2(gpt2_dir / "encoder.json", gpt2_dir / "vocab.bpe")
    encoder = json.loads((gpt2_dir / "encoder.json").read_text(encoding="utf-8"))
    ranks = {bytelevel_to_bytes(s): i for s, i in encoder.items() if s != "<|endoftext|>"}
    enc = tiktoken.Encoding("gpt2", pat_str=gpt2.PATTERN_R50K, mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": 50256})
    for label, text in eval_texts().items():
        text = _unicode14(text)[:300_000]
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), label
    assert tok.encode("<|endoftext|>", allowed_special="all") == [50256]


@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt2", "llama3", "qwen2", "abugida"])
def test_hf_export_reloads_with_the_same_pretokenizer(trained, tmp_path, name):
    """to_hf rewrites patterns for Oniguruma; from_hf still recognises the registered pre-tokenizer
    (and so keeps its compiled scanner), and an all-splits merge list comes back rank-only."""
    tok = cybpe.Tokenizer(trained.vocab, name)
    tok.to_hf(tmp_path / "tokenizer.json")
    again = cybpe.Tokenizer.from_hf(tmp_path / "tokenizer.json")
    assert again.pretokenizer.name == name and again.pretokenizer.uses_scanner
    assert again.vocab.merges is None
    again.to_tiktoken(tmp_path / "ranks.tiktoken")
    for text in [UDHR["en"], UDHR["hi"], CODE[:20_000]]:
        assert again.encode_ordinary(text) == tok.encode_ordinary(text)
