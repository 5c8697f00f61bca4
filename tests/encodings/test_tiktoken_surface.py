"""The rest of tiktoken's ``Encoding`` surface on ``cybpe.Tokenizer``, differentially against
tiktoken on cl100k_base and o200k_base (real files, real corpora, hostile text), and a snippet
of typical tiktoken-using code run with ``tiktoken.get_encoding`` swapped for ``cybpe``'s."""

from __future__ import annotations

import hashlib
import random
import shutil

import pytest

import cybpe
from cybpe.encodings.registry import forget_built
from cybpe.errors import DisallowedSpecialTokenError, InvalidTokenError, ParameterTypeError

tiktoken = pytest.importorskip("tiktoken")
openai_public = pytest.importorskip("tiktoken_ext.openai_public")

NAMES = ("cl100k_base", "o200k_base")
HOSTILE = ["", " ", "  ", "\n", "\n\n", " \n \n", "\t\t ", "abc  ", "hello fanta", "  !", "x\r\n",
           "don't", "DON'T", "'", "'ll", "12345", "1 2 3 ", "é", "e\u0301", "中文", "日本語の", "🙂", "👍🏽",
           "\u00a0", "a\u00a0", "hi\u2003", "\u3000", "İ", "ǅ", "ﬁ", "\x00", "a<|endoftext|>", "<|endoftext|>",
           "<|endoftext|>b", "x<|fim_prefix|>", "<|endofprompt|> ", "<|endoftext", "ab/", "http://", "Ωmega ",
           "한국어", "مرحبا ", "हिन्दी", "ខ្មែរ", "\U0001F600\U0001F600", "$$$", "...", "-", "__init__"]


@pytest.fixture(scope="module")
def pairs(shared_dir):
    """name -> (cybpe tokenizer, tiktoken Encoding), tiktoken's built by its own constructor
    (its pattern and special tokens) over the shared file."""
    from tiktoken.load import load_tiktoken_bpe

    out = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(openai_public, "load_tiktoken_bpe",
                      lambda address, expected_hash=None: load_tiktoken_bpe(
                          str(shared_dir / "vocab" / address.rsplit("/", 1)[1]), expected_hash))
        for name in NAMES:
            reference = tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS[name]())
            out[name] = (cybpe.Tokenizer.from_tiktoken(shared_dir / "vocab" / f"{name}.tiktoken"), reference)
    return out


@pytest.fixture(scope="module")
def corpus(shared_dir) -> dict[str, str]:
    return {str(p.relative_to(shared_dir / "corpora" / "eval")): p.read_text(encoding="utf-8")[:20000]
            for p in sorted((shared_dir / "corpora" / "eval").rglob("*.txt"))}


@pytest.mark.parametrize("name", NAMES)
def test_attributes(pairs, name):
    tok, ref = pairs[name]
    assert tok.name == ref.name
    assert tok.eot_token == ref.eot_token
    assert tok.max_token_value == ref.max_token_value
    assert tok.n_vocab == ref.n_vocab
    assert tok.special_tokens_set == ref.special_tokens_set


@pytest.mark.parametrize("name", NAMES)
def test_token_byte_values(pairs, name):
    tok, ref = pairs[name]
    assert tok.token_byte_values() == ref.token_byte_values()


@pytest.mark.parametrize("name", NAMES)
def test_is_special_token(pairs, name):
    tok, ref = pairs[name]
    ids = list(range(0, 300)) + list(range(ref.max_token_value - 300, ref.max_token_value + 1))
    assert [tok.is_special_token(i) for i in ids] == [ref.is_special_token(i) for i in ids]
    with pytest.raises(ParameterTypeError):
        tok.is_special_token("<|endoftext|>")


@pytest.mark.parametrize("name", NAMES)
def test_decode_batches(pairs, corpus, name):
    tok, ref = pairs[name]
    batch = [ref.encode(text, disallowed_special=()) for text in corpus.values()]
    # cuts inside multi-byte characters, so that the error handlers matter
    cut = [ids[k:k + 37] for ids in batch for k in range(0, min(len(ids), 2000), 37)]
    assert tok.decode_bytes_batch(batch) == ref.decode_bytes_batch(batch)
    assert tok.decode_bytes_batch(cut, num_threads=3) == ref.decode_bytes_batch(cut, num_threads=3)
    for errors in ("replace", "ignore", "backslashreplace", "surrogateescape"):
        assert tok.decode_batch(cut, errors=errors) == ref.decode_batch(cut, errors=errors), errors
    assert tok.decode_batch([]) == [] and tok.decode_bytes_batch([[]]) == [b""]
    with pytest.raises(InvalidTokenError):
        tok.decode_batch([[1, 2], [tok.max_token_value + 1]])
    with pytest.raises(ParameterTypeError):
        tok.decode_batch("abc")


def _unstable_cases(corpus: dict[str, str], seed: int, per_file: int) -> list[str]:
    rng = random.Random(seed)
    cases = list(HOSTILE)
    for text in corpus.values():
        for _ in range(per_file):
            end = rng.randrange(1, min(len(text), 3000))
            cases.append(text[max(0, end - rng.choice([1, 5, 40, 300])):end])
    return cases


def _same_unstable(tok, ref, text: str, **kwargs) -> None:
    stable, completions = tok.encode_with_unstable(text, **kwargs)
    ref_stable, ref_completions = ref.encode_with_unstable(text, **kwargs)
    assert stable == ref_stable, repr(text)
    assert completions == sorted(completions)
    assert len(completions) == len(ref_completions)
    assert {tuple(c) for c in completions} == {tuple(c) for c in ref_completions}, repr(text)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_encode_with_unstable(pairs, corpus, name):
    tok, ref = pairs[name]
    for text in _unstable_cases(corpus, seed=len(name), per_file=1):
        _same_unstable(tok, ref, text, allowed_special="all")
    for text in ("a<|endoftext|>", "<|endoftext|> x", "x <|fim_prefix|>"):
        _same_unstable(tok, ref, text, disallowed_special=())
        if name == "cl100k_base":
            _same_unstable(tok, ref, text, allowed_special={"<|fim_prefix|>"}, disallowed_special=())


def test_encode_with_unstable_refuses_a_disallowed_special(pairs):
    tok, ref = pairs["cl100k_base"]
    with pytest.raises(ValueError):
        ref.encode_with_unstable("a <|endoftext|>")
    with pytest.raises(DisallowedSpecialTokenError):
        tok.encode_with_unstable("a <|endoftext|>")


def test_encode_with_unstable_contract(pairs):
    """tiktoken's documented promise, on a trained tokenizer too (its own vocabulary)."""
    trained = cybpe.train(["hello world, hello fanta, the quick brown fox " * 30], 400, "cl100k", progress=False)
    for tok in (pairs["cl100k_base"][0], trained):
        for text in ("hello fanta", "the qu", "hello  ", "fox"):
            stable, completions = tok.encode_with_unstable(text)
            assert text.encode().startswith(tok.decode_bytes(stable))
            assert completions and all(tok.decode_bytes(stable + c).startswith(text.encode()) for c in completions)


# ------------------------------------------------------------------------------ drop-in swap
def typical_tiktoken_code(get_encoding, encoding_for_model) -> dict:
    """What code written for tiktoken commonly does with an encoding."""
    enc = get_encoding("cl100k_base")
    texts = ["Hello, world!", "def f(x):\n    return x ** 2\n", "Grüße aus Köln 🙂", "中文文本，标点。", ""]
    long_text = " ".join(texts) * 50
    out: dict = {"name": enc.name, "n_vocab": enc.n_vocab, "max": enc.max_token_value, "eot": enc.eot_token,
                 "specials": sorted(enc.special_tokens_set)}
    out["counts"] = [len(enc.encode(t)) for t in texts]
    out["batch"] = enc.encode_batch(texts)
    out["ordinary_batch"] = enc.encode_ordinary_batch(texts, num_threads=2)
    out["allowed"] = enc.encode("end <|endoftext|>", allowed_special={"<|endoftext|>"})
    out["all"] = enc.encode("<|fim_prefix|>a<|fim_suffix|>", allowed_special="all")
    out["as text"] = enc.encode("end <|endoftext|>", disallowed_special=())
    try:
        enc.encode("end <|endoftext|>")
        out["raised"] = False
    except ValueError:
        out["raised"] = True
    ids = enc.encode(long_text)
    out["ids"] = ids
    out["numpy"] = enc.encode_to_numpy(long_text).tolist()
    chunks = [ids[i:i + 100] for i in range(0, len(ids), 100)]
    out["chunks"] = enc.decode_batch(chunks)
    out["chunk bytes"] = enc.decode_bytes_batch(chunks)
    out["round trip"] = enc.decode(ids) == long_text
    out["truncated"] = enc.decode(ids[:17])
    out["tokens"] = enc.decode_tokens_bytes(ids[:60])
    out["single"] = [enc.decode_single_token_bytes(t) for t in ids[:20]]
    out["lookup"] = [enc.encode_single_token("hello"), enc.encode_single_token(b" world"),
                     enc.encode_single_token("<|endoftext|>")]
    out["offsets"] = enc.decode_with_offsets(enc.encode("Grüße 中文 🙂"))
    out["with eot"] = enc.encode_ordinary(texts[0]) + [enc.eot_token]
    out["special ids"] = [t for t in out["all"] if enc.is_special_token(t)]
    out["byte values"] = len(enc.token_byte_values())
    stable, completions = enc.encode_with_unstable("hello fan")
    out["unstable"] = (stable, sorted(map(tuple, completions)))
    out["models"] = [encoding_for_model(m).name for m in ("gpt-4", "gpt-4o-mini", "text-embedding-3-small")]
    return out


def test_typical_tiktoken_code_gives_identical_results(shared_dir, tmp_path, monkeypatch):
    """Both libraries read the same tiktoken cache (sha1-named copies of the shared files)."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CYBPE_ENCODINGS_DIR", raising=False)
    for name in NAMES:
        address = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        shutil.copy(shared_dir / "vocab" / f"{name}.tiktoken", tmp_path / hashlib.sha1(address.encode()).hexdigest())
    import tiktoken.load

    def no_network(*args, **kwargs):
        raise AssertionError("a file was fetched")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    forget_built()
    try:
        expected = typical_tiktoken_code(tiktoken.get_encoding, tiktoken.encoding_for_model)
        got = typical_tiktoken_code(cybpe.get_encoding, cybpe.encoding_for_model)
    finally:
        forget_built()
    assert got.keys() == expected.keys()
    for key in expected:
        assert got[key] == expected[key], key


def test_the_documented_differences(pairs):
    """README, "Named encodings": each remaining difference, on both sides, as written there."""
    tok, ref = pairs["cl100k_base"]
    rows = [  # (call on an encoding, tiktoken's exception, cybpe's)
        (lambda e: e.decode([10**6]), KeyError, InvalidTokenError),
        (lambda e: e.decode_single_token_bytes(10**6), KeyError, InvalidTokenError),
        (lambda e: e.encode_single_token("qqqqqqqqzzz"), KeyError, InvalidTokenError),
        (lambda e: e.decode([1.5]), TypeError, InvalidTokenError),
        (lambda e: e.is_special_token("x"), AssertionError, ParameterTypeError),
    ]
    for call, theirs, ours in rows:
        with pytest.raises(theirs):
            call(ref)
        with pytest.raises(ours):
            call(tok)
    assert issubclass(InvalidTokenError, ValueError) and issubclass(ParameterTypeError, TypeError)
    # tiktoken's KeyError contract holds: the typed error is a KeyError too
    assert issubclass(InvalidTokenError, KeyError)
    for call in (lambda e: e.decode([100256]), lambda e: e.decode_single_token_bytes(100256),
                 lambda e: e.encode_single_token("hello world!!")):
        for enc in (ref, tok):
            with pytest.raises(KeyError):
                call(enc)
    # a name in allowed_special that is no special token is ignored by both
    for text in ("hi", "a<|nope|>", "<|nope|><|endoftext|>"):
        assert tok.encode(text, allowed_special={"<|nope|>", "<|endoftext|>"}) == \
            ref.encode(text, allowed_special={"<|nope|>", "<|endoftext|>"})
    with pytest.raises(ValueError):
        ref.encode("a<|endoftext|>", allowed_special={"<|nope|>"})
    with pytest.raises(DisallowedSpecialTokenError):
        tok.encode("a<|endoftext|>", allowed_special={"<|nope|>"})
    with pytest.raises(ValueError):  # disallowed_special naming a plain string raises in both
        ref.encode("a<|nope|>", disallowed_special={"<|nope|>"})
    with pytest.raises(DisallowedSpecialTokenError):
        tok.encode("a<|nope|>", disallowed_special={"<|nope|>"})
    # special tokens given as bytes
    assert tok.encode_single_token(b"<|endoftext|>") == ref.encode_single_token(b"<|endoftext|>") == 100257
    trained = cybpe.train(["no end of text token here " * 5], 300, progress=False)
    with pytest.raises(InvalidTokenError):
        trained.eot_token
    with pytest.raises(ValueError):
        tiktoken.get_encoding("no-such-encoding")
    with pytest.raises(ValueError):
        cybpe.get_encoding("no-such-encoding")
    with pytest.raises(KeyError):
        cybpe.get_encoding("no-such-encoding")
