"""Vocabularies with gaps (ranks that skip ids: p50k_base and p50k_edit skip 50256, where
``<|endoftext|>`` sits) and aliases (special tokens sharing an id: o200k_harmony's 200018), loaded,
encoded and decoded as tiktoken does (differentially, on the real files), and refused with
``ExportError`` by every format that cannot hold them."""

from __future__ import annotations

import hashlib
import pickle

import pytest

import cybpe
from cybpe.encodings.registry import forget_built
from cybpe.errors import ExportError, FormatError, InvalidTokenError

tiktoken = pytest.importorskip("tiktoken")

URLS = {name: f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        for name in ("r50k_base", "p50k_base", "cl100k_base", "o200k_base")}
TEXTS = ["hello world", "hello <|endoftext|> there", "    indented\n        code()\n", "", " ",
         "<|endofprompt|><|reserved_200018|><|start|>assistant<|channel|>final<|message|>hi<|end|>",
         "<|fim_prefix|>a<|fim_middle|>b<|fim_suffix|>", "中文 🙂 x" * 3, "don't  stop\t\t\n\n", " " * 40]


@pytest.fixture(scope="module")
def pairs(shared_dir, tmp_path_factory):
    """name -> (cybpe's registered encoding, tiktoken's), tiktoken reading a cache made of the
    shared files (nothing fetched)."""
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for name, url in URLS.items():
        (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(
            (shared_dir / "vocab" / f"{name}.tiktoken").read_bytes())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        patch.setenv("CYBPE_ENCODINGS_DIR", str(shared_dir / "vocab"))
        forget_built()
        out = {}
        for name in ("p50k_base", "p50k_edit", "o200k_harmony"):
            ref = tiktoken.get_encoding(name)
            out[name] = (cybpe.get_encoding(name), ref)
        forget_built()
    return out


@pytest.mark.parametrize("name", ["p50k_base", "p50k_edit", "o200k_harmony"])
def test_encode_decode_as_tiktoken(pairs, name, shared_dir):
    tok, ref = pairs[name]
    assert tok.n_vocab == ref.n_vocab and tok.max_token_value == ref.max_token_value
    assert tok.special_tokens == ref._special_tokens
    assert tok.token_byte_values() == ref.token_byte_values()
    corpus = sorted((shared_dir / "corpora" / "eval").rglob("*.txt"))[:3]
    texts = TEXTS + [p.read_text(encoding="utf-8")[:20000] for p in corpus]
    for text in texts:
        assert tok.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all"), text[:40]
        assert tok.encode_ordinary(text) == ref.encode_ordinary(text), text[:40]
        ids = ref.encode(text, allowed_special="all")
        assert tok.decode(ids) == ref.decode(ids)
        assert tok.decode_tokens_bytes(ids) == ref.decode_tokens_bytes(ids)
    assert tok.encode_batch(texts, allowed_special="all") == ref.encode_batch(texts, allowed_special="all")
    # every special id (an id in a gap, an aliased id) and the ids around the gap
    for value in sorted(set(ref._special_tokens.values())) + list(range(50250, 50290)):
        try:
            expected = ref.decode_single_token_bytes(value)
        except KeyError:
            with pytest.raises(KeyError):
                tok.decode_single_token_bytes(value)
            with pytest.raises(InvalidTokenError):
                tok.decode([1, value])
            continue
        assert tok.decode_single_token_bytes(value) == expected, value
        assert tok.decode_bytes([value, 2, value]) == ref.decode_bytes([value, 2, value])
        assert tok.encode_single_token(expected) == ref.encode_single_token(expected), value
    for special in ref._special_tokens:
        assert tok.encode_single_token(special.encode()) == ref.encode_single_token(special.encode())


def test_a_gap_without_special_token_raises_key_error(pairs):
    tok, _ = pairs["p50k_base"]
    vocab = cybpe.Vocab(list(tok.vocab.tokens), None, {}, True)  # 50256 is now an empty id
    bare = cybpe.Tokenizer(vocab, "gpt2")
    assert bare.vocab.gaps == {50256}
    for call in (lambda: bare.decode([50256]), lambda: bare.decode_single_token_bytes(50256),
                 lambda: bare.decode_tokens_bytes([50256]), lambda: bare.decode_bytes(iter([1, 50256]))):
        with pytest.raises(InvalidTokenError):
            call()
        with pytest.raises(KeyError):
            call()
    assert bare.decode(iter([31373, 995])) == "hello world"
    # the encoder's stand-in for the gap is no token: not found, never produced
    placeholder = bare._encoder_tokens[50256]
    with pytest.raises(KeyError):
        bare.encode_single_token(placeholder)
    assert 50256 not in bare.encode_ordinary(placeholder.decode("utf-8", "replace"))
    assert placeholder not in bare.token_byte_values()


def test_aliases_decode_to_the_first_name(pairs):
    tok, ref = pairs["o200k_harmony"]
    assert tok.encode("<|endofprompt|><|reserved_200018|>", allowed_special="all") == [200018, 200018]
    assert tok.decode([200018]) == ref.decode([200018]) == "<|endofprompt|>"
    assert tok.vocab.aliased_ids == {200018}


def test_exports_refuse_gaps_and_aliases(pairs, tmp_path, shared_dir):
    p50k, _ = pairs["p50k_base"]
    harmony, _ = pairs["o200k_harmony"]
    for tok, what in ((p50k, "skip"), (harmony, "one id")):
        for call in (lambda t: t.to_hf(tmp_path / "tokenizer.json"),
                     lambda t: t.save_pretrained(tmp_path / "folder"),
                     lambda t: t.to_gpt2(tmp_path / "encoder.json", tmp_path / "vocab.bpe"),
                     lambda t: cybpe.save(t, tmp_path / "x" / "tokenizer.json", format="hf")):
            with pytest.raises(ExportError, match=what):
                call(tok)
    assert not (tmp_path / "tokenizer.json").exists() and not (tmp_path / "encoder.json").exists()
    with pytest.raises(ExportError, match="skip"):
        p50k.save(tmp_path / "p50k.json")
    # .tiktoken holds gaps: p50k_base saves back byte for byte, and loads again
    p50k.to_tiktoken(tmp_path / "p50k_base.tiktoken")
    assert (tmp_path / "p50k_base.tiktoken").read_bytes() == (shared_dir / "vocab" / "p50k_base.tiktoken").read_bytes()
    again = cybpe.Tokenizer.from_tiktoken(tmp_path / "p50k_base.tiktoken", "gpt2", {"<|endoftext|>": 50256})
    assert again == p50k
    # cybpe's own format holds aliases (the first name stays first)
    harmony.save(tmp_path / "harmony.json")
    loaded = cybpe.Tokenizer.load(tmp_path / "harmony.json")
    assert loaded.special_tokens == harmony.special_tokens and loaded.decode([200018]) == "<|endofprompt|>"


def test_pickle_and_hash(pairs):
    for tok, _ in pairs.values():
        again = pickle.loads(pickle.dumps(tok))
        assert again == tok and hash(again) == hash(tok)
        assert again.encode("hello <|endoftext|>", allowed_special="all") == tok.encode(
            "hello <|endoftext|>", allowed_special="all")
    assert len({tok for tok, _ in pairs.values()}) == 3


def test_gap_rules():
    tokens = [bytes([b]) for b in range(256)] + [None, b"ab"]
    assert cybpe.Vocab(tokens, None, {"<|x|>": 256}).n_vocab == 258
    cybpe.Vocab(tokens, None, {"<|x|>": 256}).validate()
    with pytest.raises(FormatError, match="rank-only"):
        cybpe.Vocab(tokens, [(97, 98)], {}).validate()
    with pytest.raises(FormatError, match="last ordinary id"):
        cybpe.Vocab(tokens[:-1], None, {}).validate()
    with pytest.raises(FormatError, match="collides"):
        cybpe.Vocab(tokens, None, {"<|x|>": 257}).validate()
    tok = cybpe.Tokenizer(cybpe.Vocab(tokens, None, {"<|x|>": 256, "<|y|>": 256}), "cl100k")
    assert tok.encode("ab<|y|>", allowed_special="all") == [257, 256]
    assert tok.decode([256, 257]) == "<|x|>ab"


def test_tiktoken_file_with_skipped_ranks(tmp_path):
    import base64

    lines = [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)]
    path = tmp_path / "gap.tiktoken"
    path.write_bytes(b"\n".join(lines + [base64.b64encode(b"ab") + b" 300"]) + b"\n")
    from cybpe.formats.tiktoken import load_tiktoken

    vocab = load_tiktoken(path)
    assert vocab.gaps == frozenset(range(256, 300)) and vocab.tokens[300] == b"ab"
    path.write_bytes(b"\n".join(lines + [base64.b64encode(b"ab") + b" 100000"]) + b"\n")
    with pytest.raises(FormatError, match="skip more ids"):
        load_tiktoken(path)
    path.write_bytes(b"\n".join(lines + [base64.b64encode(b"ab") + b" 255"]) + b"\n")
    with pytest.raises(FormatError, match="line 257"):
        load_tiktoken(path)
