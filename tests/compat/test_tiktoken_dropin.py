"""``cybpe.compat.install_tiktoken()``: typical programs written for tiktoken (OpenAI cookbook's
``num_tokens_from_messages``, truncation, chunking, batch encode, Meta's Llama 3 reference
tokenizer built from ``load_tiktoken_bpe``, caching by encoding, pickling) run once with the
real tiktoken and once with ``import tiktoken`` giving cybpe's modules; every result must be
equal. tiktoken's own test suite runs in CI (``.ci/stage-tiktoken-suite.sh``)."""

from __future__ import annotations

import functools
import hashlib
import pickle
import subprocess
import sys

import pytest

import cybpe
from cybpe.compat import install_tiktoken, tiktoken_is_installed, uninstall_tiktoken
from cybpe.encodings.registry import forget_built

real_tiktoken = pytest.importorskip("tiktoken")
if real_tiktoken.__name__ != "tiktoken":  # installed by an earlier test and left: not the real one
    pytest.skip("sys.modules['tiktoken'] is not the real tiktoken", allow_module_level=True)

BLOB = "https://openaipublic.blob.core.windows.net/"
FILES = {"encodings/r50k_base.tiktoken": "r50k_base.tiktoken", "encodings/p50k_base.tiktoken": "p50k_base.tiktoken",
         "encodings/cl100k_base.tiktoken": "cl100k_base.tiktoken", "encodings/o200k_base.tiktoken": "o200k_base.tiktoken",
         "gpt-2/encodings/main/vocab.bpe": "gpt2/vocab.bpe", "gpt-2/encodings/main/encoder.json": "gpt2/encoder.json"}
LLAMA3_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


@pytest.fixture
def offline(shared_dir, tmp_path, monkeypatch):
    """A tiktoken cache made of the shared files (for the real tiktoken), the shared folder as
    CYBPE_ENCODINGS_DIR (for cybpe); tiktoken's and cybpe's built encodings forgotten."""
    for address, relative in FILES.items():
        (tmp_path / hashlib.sha1((BLOB + address).encode()).hexdigest()).write_bytes(
            (shared_dir / "vocab" / relative).read_bytes())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CYBPE_ENCODINGS_DIR", str(shared_dir / "vocab"))
    real_tiktoken.registry.ENCODINGS.clear()
    forget_built()
    yield shared_dir / "vocab"
    real_tiktoken.registry.ENCODINGS.clear()
    forget_built()


@pytest.fixture
def with_cybpe():
    """Run a function with ``import tiktoken`` giving cybpe's modules, then put the real back."""
    def run(fn, *args):
        module = install_tiktoken()
        try:
            assert tiktoken_is_installed() and sys.modules["tiktoken"] is module
            return fn(*args)
        finally:
            uninstall_tiktoken()
            assert sys.modules["tiktoken"] is real_tiktoken
    return run


def typical_program(vocab_dir) -> dict:
    """Code as users write it for tiktoken; it imports tiktoken itself."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    out: dict = {"module": None}

    # OpenAI cookbook: counting tokens of chat messages
    def num_tokens_from_messages(messages, model="gpt-4o-mini-2024-07-18"):
        try:
            encoding = tiktoken.encoding_for_model(model)
        except KeyError:
            encoding = tiktoken.get_encoding("o200k_base")
        tokens_per_message, tokens_per_name = 3, 1
        num_tokens = 0
        for message in messages:
            num_tokens += tokens_per_message
            for key, value in message.items():
                num_tokens += len(encoding.encode(value))
                if key == "name":
                    num_tokens += tokens_per_name
        return num_tokens + 3

    messages = [{"role": "system", "content": "You are a helpful, pattern-following assistant."},
                {"role": "user", "name": "example_user", "content": "New synergies will help drive top-line growth."},
                {"role": "assistant", "content": "Things working well together will increase revenue."}]
    for model in ("gpt-3.5-turbo-0125", "gpt-4-0613", "gpt-4o", "gpt-4o-mini-2024-07-18", "unknown-model",
                  "gpt-oss-120b", "text-davinci-003"):
        out[f"messages {model}"] = num_tokens_from_messages(messages, model)
        out[f"name {model}"] = tiktoken.encoding_name_for_model(model) if model != "unknown-model" else None

    # truncation and chunking
    enc = tiktoken.get_encoding("cl100k_base")
    text = (vocab_dir / "MANIFEST.md").read_text(encoding="utf-8")
    ids = enc.encode(text, disallowed_special=())
    out["truncated"] = enc.decode(ids[:100])
    out["chunks"] = [enc.decode(ids[i:i + 256]) for i in range(0, len(ids), 256)]
    out["offsets"] = enc.decode_with_offsets(ids[:50])

    # batch encode / decode, numpy, specials
    docs = [line for line in text.splitlines() if line.strip()][:40] + ["<|endoftext|> and <|fim_prefix|>"]
    for name in ("r50k_base", "p50k_base", "p50k_edit", "o200k_base", "o200k_harmony", "gpt2"):
        e = tiktoken.get_encoding(name)
        batch = e.encode_batch(docs, allowed_special="all")
        out[f"batch {name}"] = batch
        out[f"ordinary batch {name}"] = e.encode_ordinary_batch(docs)
        out[f"decoded {name}"] = e.decode_batch(batch)
        out[f"numpy {name}"] = e.encode_to_numpy(docs[0]).tolist()
        out[f"eot {name}"] = (e.eot_token, e.n_vocab, e.max_token_value, e.name, repr(e))
        out[f"single {name}"] = e.encode_single_token(b"<|endoftext|>")
        try:
            e.decode_single_token_bytes(e.n_vocab + 5)
        except KeyError:
            out[f"unknown id {name}"] = "KeyError"
        try:
            e.encode("x<|endoftext|>")
        except ValueError:
            out[f"disallowed {name}"] = "ValueError"
        out[f"not special {name}"] = e.encode("a <|nope|>", allowed_special={"<|nope|>"})
    out["unused cl100k id"] = []
    for bad in (100256, 100261):
        try:
            enc.decode([bad])
        except KeyError:
            out["unused cl100k id"].append(bad)

    # Meta's Llama 3 reference tokenizer builds its Encoding from a .tiktoken file
    ranks = load_tiktoken_bpe(str(vocab_dir / "cl100k_base.tiktoken"))
    specials = ["<|begin_of_text|>", "<|end_of_text|>"] + [f"<|reserved_special_token_{i}|>" for i in range(6)]
    model = tiktoken.Encoding(name="llama-like", pat_str=LLAMA3_PATTERN, mergeable_ranks=ranks,
                              special_tokens={s: len(ranks) + i for i, s in enumerate(specials)})
    out["llama"] = model.encode("<|begin_of_text|>Hello, world!\n  x", allowed_special="all")
    out["llama special"] = (model.n_vocab, sorted(model.special_tokens_set), model._special_tokens == dict(
        (s, len(ranks) + i) for i, s in enumerate(specials)))
    out["llama pickle"] = pickle.loads(pickle.dumps(model)).encode("pickled <|end_of_text|>", allowed_special="all")

    # an encoding as a cache key (functools.lru_cache hashes it)
    @functools.lru_cache(maxsize=None)
    def count(encoding, text):
        return len(encoding.encode(text))
    out["cached"] = [count(enc, "hello world"), count(enc, "hello world"), count(tiktoken.get_encoding("o200k_base"), "hi")]
    out["hashable"] = len({enc, tiktoken.get_encoding("cl100k_base")})
    out["pickle registered"] = pickle.loads(pickle.dumps(enc)).encode("hello world")
    out["list"] = sorted(set(tiktoken.list_encoding_names()) & {"gpt2", "r50k_base", "p50k_base", "p50k_edit",
                                                                "cl100k_base", "o200k_base", "o200k_harmony"})
    out["bytes"] = enc._encode_bytes(b" \xec\x8b\xa4\xed"), enc._encode_single_piece("helloqqqq")
    out["tables"] = (tiktoken.model.MODEL_TO_ENCODING["gpt-4"], tiktoken.model.MODEL_PREFIX_TO_ENCODING["gpt-oss-"])
    return out


def test_typical_program_gives_tiktokens_results(offline, with_cybpe):
    expected = typical_program(offline)
    got = with_cybpe(typical_program, offline)
    assert got.keys() == expected.keys()
    for key in expected:
        assert got[key] == expected[key], key


def test_the_installed_modules_are_cybpes(offline, with_cybpe):
    def check():
        import tiktoken
        import tiktoken.core
        import tiktoken.load
        import tiktoken.model
        import tiktoken.registry
        import tiktoken_ext.openai_public

        assert tiktoken.__name__ == "cybpe.compat.tiktoken"
        enc = tiktoken.get_encoding("cl100k_base")
        assert isinstance(enc, tiktoken.Encoding) and isinstance(enc, cybpe.Tokenizer)
        assert tiktoken.core.Encoding is tiktoken.Encoding and tiktoken.registry.ENCODINGS["cl100k_base"] is enc
        assert tiktoken.get_encoding("cl100k_base") is enc
        kwargs = tiktoken_ext.openai_public.ENCODING_CONSTRUCTORS["p50k_base"]()
        assert kwargs["explicit_n_vocab"] == 50281 and len(kwargs["mergeable_ranks"]) == 50280
        rebuilt = tiktoken.Encoding(**kwargs)
        assert rebuilt.encode("hello world") == [31373, 995] and rebuilt == tiktoken.get_encoding("p50k_base")
        return True
    assert with_cybpe(check)
    # the real constructor kwargs and ours agree
    import tiktoken_ext.openai_public as real_public

    theirs = real_public.ENCODING_CONSTRUCTORS["p50k_edit"]()

    def ours():
        import tiktoken_ext.openai_public as public
        return public.ENCODING_CONSTRUCTORS["p50k_edit"]()
    mine = with_cybpe(ours)
    assert mine == theirs


def test_install_in_a_fresh_interpreter(offline):
    """In a new process, install_tiktoken() before any import: the program never loads the real
    tiktoken (its compiled extension stays out of sys.modules)."""
    program = ("import cybpe.compat, sys; cybpe.compat.install_tiktoken(); import tiktoken; "
               "e = tiktoken.encoding_for_model('text-davinci-003'); print(e.encode('hello world'), "
               "'tiktoken._tiktoken' in sys.modules)\n"
               "try:\n    import tiktoken._tiktoken\nexcept ModuleNotFoundError:\n    print('unreachable')")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[31373,", "995]", "False", "unreachable"]
