"""The encoding registry (``cybpe.get_encoding``): tiktoken's definitions, offline file lookup,
sha256 checks, the opt-in download (against a server on 127.0.0.1 only) and plugins."""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest
import regex

import cybpe
from cybpe.encodings import EncodingFile
from cybpe.encodings.known_encodings import MODEL_PREFIXES, MODELS, TIKTOKEN_DEFINITIONS
from cybpe.encodings.registry import encoding_entry, forget_built
from cybpe.errors import (
    DownloadError,
    DuplicateEncodingError,
    HashMismatchError,
    MissingEncodingFileError,
    UnknownEncodingError,
)

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
# The sha256 values tiktoken publishes (tiktoken_ext/openai_public.py), written out here so
# that this test does not depend on the registry's own copy of them.
PUBLISHED_SHA256 = {
    "cl100k_base.tiktoken": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base.tiktoken": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "gpt2/vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    "gpt2/encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "r50k_base.tiktoken": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
}
HOSTILE = ["", " ", "  \n\n \t", "'S'T'Re'LL", "don't I'M", "1234567 89", "a\r\nb\rc\n", "\u00a0\u2003x",
           "İstanbul ǅungla ǈ", "🙂🙂 👍🏽", "ﬁ ﬀ", "\x00\x01\x1f", "e\u0301\u0301", "a\u200db", "x" * 3000,
           " " * 500 + "!", "中文字符,日本語。", "한국어 텍스트", "مرحبا بالعالم", "हिन्दी", "ab//cd\\\\", "!!!???...\n\n\n"]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def places(tmp_path, monkeypatch):
    """Empty CYBPE_ENCODINGS_DIR and tiktoken cache; built encodings forgotten before and after."""
    encodings, cache = tmp_path / "encodings", tmp_path / "cache"
    encodings.mkdir()
    cache.mkdir()
    monkeypatch.setenv("CYBPE_ENCODINGS_DIR", str(encodings))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    forget_built()
    yield types.SimpleNamespace(encodings=encodings, cache=cache)
    forget_built()


@pytest.fixture(scope="module")
def vocab_dir(shared_dir) -> Path:
    return shared_dir / "vocab"


@pytest.fixture(scope="module")
def sample_text(shared_dir) -> str:
    parts = []
    for path in sorted((shared_dir / "corpora" / "eval").rglob("*.txt")):
        parts.append(path.read_text(encoding="utf-8")[:3000])
    return "\n".join(parts + HOSTILE)


def _r50k_file(vocab_dir: Path, target: Path) -> Path:
    """r50k_base.tiktoken rebuilt from the GPT-2 files: the GPT-2 ids as ranks, one line each."""
    tok = cybpe.Tokenizer.from_gpt2(vocab_dir / "gpt2" / "encoder.json", vocab_dir / "gpt2" / "vocab.bpe")
    target.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tok.vocab.tokens)))
    return target


# -------------------------------------------------------------- definitions = tiktoken's own
def _tiktoken_constructor_outputs(monkeypatch):
    """Every tiktoken encoding constructor's kwargs, with the file loaders replaced by recorders
    (no file is read, nothing is fetched): name -> (kwargs, [(address, sha256), ...])."""
    pytest.importorskip("tiktoken")
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    seen: list = []

    def fake_tiktoken_bpe(address, expected_hash=None):
        seen.append((address, expected_hash))
        return {bytes([i]): i for i in range(256)}

    def fake_data_gym(vocab_bpe_file, encoder_json_file, vocab_bpe_hash=None, encoder_json_hash=None):
        seen.extend([(vocab_bpe_file, vocab_bpe_hash), (encoder_json_file, encoder_json_hash)])
        return {bytes([i]): i for i in range(256)}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", fake_tiktoken_bpe)
    monkeypatch.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", fake_data_gym)
    out = {}
    for name, constructor in openai_public.ENCODING_CONSTRUCTORS.items():
        seen.clear()
        out[name] = (constructor(), list(seen))
    return out


@pytest.fixture(scope="module")
def tiktoken_kwargs():
    """name -> the kwargs tiktoken's own constructor returns (pattern, special tokens...)."""
    with pytest.MonkeyPatch.context() as patch:
        return {name: kwargs for name, (kwargs, _) in _tiktoken_constructor_outputs(patch).items()}


def test_definitions_are_tiktokens(monkeypatch):
    outputs = _tiktoken_constructor_outputs(monkeypatch)
    registered = set(cybpe.list_encoding_names())
    for name, (kwargs, files) in outputs.items():
        assert name in registered, name
        definition = TIKTOKEN_DEFINITIONS[name]
        pattern = cybpe.get_pretokenizer(definition["pretokenizer"]).pattern
        if definition["pretokenizer"] == "gpt2":  # GPT-2's original form; tiktoken's is kept too
            from cybpe_pretokenizers.gpt2 import PATTERN_R50K as pattern
        assert pattern == kwargs["pat_str"], name
        assert definition["special_tokens"] == kwargs["special_tokens"], name
        assert definition["n_vocab"] == kwargs.get("explicit_n_vocab"), name
        entry = encoding_entry(name)
        assert entry.n_vocab == kwargs.get("explicit_n_vocab")
        assert [(f.url, f.sha256) for f in entry.files] == files, name


def test_o200k_harmony_is_registered_with_its_shared_special_id(monkeypatch):
    """tiktoken's definition gives one id to two special tokens; cybpe keeps both (an alias)."""
    kwargs, _ = _tiktoken_constructor_outputs(monkeypatch)["o200k_harmony"]
    ids = list(kwargs["special_tokens"].values())
    assert len(ids) != len(set(ids))
    assert "o200k_harmony" in cybpe.list_encoding_names()
    assert TIKTOKEN_DEFINITIONS["o200k_harmony"]["special_tokens"] == kwargs["special_tokens"]
    assert cybpe.encoding_name_for_model("gpt-oss-120b") == "o200k_harmony"


def test_the_shared_files_have_tiktokens_published_hashes(vocab_dir, tmp_path):
    for relative, published in PUBLISHED_SHA256.items():
        path = vocab_dir / relative if relative != "r50k_base.tiktoken" else _r50k_file(vocab_dir, tmp_path / relative)
        assert _sha256(path) == published, relative
    registered = {f.path: f.sha256 for name in cybpe.list_encoding_names() for f in encoding_entry(name).files}
    for relative, published in PUBLISHED_SHA256.items():
        assert registered[relative] == published
    for relative in ("llama3/tokenizer.json", "qwen3/tokenizer.json"):
        assert registered[relative] == _sha256(vocab_dir / relative)


@pytest.mark.parametrize("name", sorted(TIKTOKEN_DEFINITIONS))
def test_the_pretokenizer_splits_as_tiktokens_pattern(name, sample_text, tiktoken_kwargs):
    pat_str = tiktoken_kwargs[name]["pat_str"]
    pre = cybpe.get_pretokenizer(TIKTOKEN_DEFINITIONS[name]["pretokenizer"])
    assert pre.split(sample_text) == regex.findall(pat_str, sample_text)
    for text in HOSTILE:
        assert pre.split(text) == regex.findall(pat_str, text), repr(text)


# -------------------------------------------------------------------- finding files offline
def test_get_encoding_from_the_encodings_dir_equals_tiktoken(places, vocab_dir, sample_text, monkeypatch,
                                                            tiktoken_kwargs):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    monkeypatch.setenv("CYBPE_ENCODINGS_DIR", os.pathsep.join([str(places.encodings), str(vocab_dir)]))
    for name in ("cl100k_base", "o200k_base"):
        kwargs = tiktoken_kwargs[name]
        reference = tiktoken.Encoding(name, pat_str=kwargs["pat_str"],
                                      mergeable_ranks=load_tiktoken_bpe(str(vocab_dir / f"{name}.tiktoken")),
                                      special_tokens=kwargs["special_tokens"])
        enc = cybpe.get_encoding(name)
        assert enc is cybpe.get_encoding(name)  # built once, then shared
        plugin = _plugin("unrelated_base", EncodingFile("unrelated.tiktoken", "0" * 64))
        cybpe.register_plugin(plugin, "unrelated-plugin")  # the entries are collected again
        try:
            assert cybpe.get_encoding(name) is enc
        finally:
            cybpe.unregister_plugin("unrelated-plugin")
        assert enc.name == name and enc.special_tokens == reference._special_tokens
        assert enc.n_vocab == reference.n_vocab
        assert enc.encode(sample_text, allowed_special="all") == reference.encode(sample_text, allowed_special="all")


def test_gpt2_and_r50k_encode_as_tiktoken(places, vocab_dir, sample_text, tiktoken_kwargs):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    _r50k_file(vocab_dir, places.encodings / "r50k_base.tiktoken")
    shutil.copytree(vocab_dir / "gpt2", places.encodings / "gpt2")
    ranks = data_gym_to_mergeable_bpe_ranks(str(vocab_dir / "gpt2" / "vocab.bpe"),
                                            str(vocab_dir / "gpt2" / "encoder.json"))
    kwargs = tiktoken_kwargs["r50k_base"]
    reference = tiktoken.Encoding("r50k_base", pat_str=kwargs["pat_str"], mergeable_ranks=ranks,
                                  special_tokens=kwargs["special_tokens"], explicit_n_vocab=50257)
    expected = reference.encode(sample_text, disallowed_special=())
    for name in ("gpt2", "r50k_base"):
        enc = cybpe.get_encoding(name)
        assert enc.name == name and enc.n_vocab == 50257 and enc.eot_token == 50256
        assert enc.encode(sample_text, disallowed_special=()) == expected, name


def test_hf_encodings_load_as_from_hf(places, vocab_dir, monkeypatch):
    monkeypatch.setenv("CYBPE_ENCODINGS_DIR", str(vocab_dir))
    text = "Hello world, 12345 <|begin_of_text|> 中文 🙂 don't"
    for name in ("llama3", "qwen3"):
        enc = cybpe.get_encoding(name)
        direct = cybpe.Tokenizer.from_hf(vocab_dir / name / "tokenizer.json")
        assert enc.name == name and enc.vocab == direct.vocab
        assert enc.encode(text, disallowed_special=()) == direct.encode(text, disallowed_special=())


@pytest.mark.parametrize("variable", ["TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", None])
def test_get_encoding_reads_tiktokens_cache(variable, places, vocab_dir, monkeypatch, tmp_path):
    import tempfile

    monkeypatch.setenv("CYBPE_ENCODINGS_DIR", "")
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    if variable is None:  # tiktoken's default: <temp dir>/data-gym-cache
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        cache = tmp_path / "data-gym-cache"
        cache.mkdir()
    else:
        cache = places.cache
        monkeypatch.setenv(variable, str(cache))
    sha1 = hashlib.sha1(CL100K_URL.encode()).hexdigest()
    shutil.copy(vocab_dir / "cl100k_base.tiktoken", cache / sha1)
    enc = cybpe.get_encoding("cl100k_base")
    assert enc.encode("hello world") == [15339, 1917]
    assert enc.encode("<|endofprompt|>", allowed_special="all") == [100276]


def test_tiktoken_itself_reads_the_same_cache_file(places, vocab_dir, monkeypatch):
    """The cache name is right: tiktoken loads the file cybpe reads, offline."""
    tiktoken = pytest.importorskip("tiktoken")
    import tiktoken.load

    def no_network(*args, **kwargs):
        raise AssertionError("tiktoken tried to fetch a file")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    shutil.copy(vocab_dir / "cl100k_base.tiktoken", places.cache / hashlib.sha1(CL100K_URL.encode()).hexdigest())
    ranks = tiktoken.load.load_tiktoken_bpe(CL100K_URL, expected_hash=PUBLISHED_SHA256["cl100k_base.tiktoken"])
    assert len(ranks) == len(cybpe.get_encoding("cl100k_base").vocab.tokens) == 100256


def test_a_missing_file_says_which_hash_and_where(places, monkeypatch):
    import urllib.request

    def no_network(*args, **kwargs):
        raise AssertionError("get_encoding tried the network")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    with pytest.raises(MissingEncodingFileError) as info:
        cybpe.get_encoding("cl100k_base")
    error = info.value
    assert isinstance(error, FileNotFoundError)
    message = str(error)
    sha1 = hashlib.sha1(CL100K_URL.encode()).hexdigest()
    for needle in ("cl100k_base.tiktoken", PUBLISHED_SHA256["cl100k_base.tiktoken"],
                   str(places.encodings / "cl100k_base.tiktoken"), str(places.cache / sha1),
                   "cybpe.download('cl100k_base')", CL100K_URL):
        assert needle in message, needle
    assert error.encoding == "cl100k_base" and error.file == "cl100k_base.tiktoken"
    assert str(places.cache / sha1) in error.searched
    with pytest.raises(MissingEncodingFileError, match="no download address"):
        cybpe.get_encoding("llama3")


def test_a_wrong_file_is_refused_and_left_alone(places, vocab_dir):
    wrong = places.encodings / "cl100k_base.tiktoken"
    shutil.copy(vocab_dir / "o200k_base.tiktoken", wrong)
    before = wrong.read_bytes()
    with pytest.raises(HashMismatchError, match=PUBLISHED_SHA256["o200k_base.tiktoken"]):
        cybpe.get_encoding("cl100k_base")
    assert wrong.read_bytes() == before


def test_unknown_names_and_models():
    with pytest.raises(UnknownEncodingError, match="cl100k_base") as info:
        cybpe.get_encoding("cl100k")
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    assert "Did you mean 'cl100k_base'" in str(info.value)
    with pytest.raises(KeyError):
        cybpe.encoding_for_model("no-such-model")
    with pytest.raises(cybpe.errors.ParameterTypeError):
        cybpe.get_encoding(None)
    assert cybpe.list_encoding_names() == sorted(cybpe.list_encoding_names())


MODELS_TO_CHECK = [
    "gpt-4o", "gpt-4o-2024-05-13", "gpt-4o-mini", "chatgpt-4o-latest", "gpt-4", "gpt-4-0613", "gpt-4-32k",
    "gpt-3.5-turbo", "gpt-3.5-turbo-16k", "gpt-35-turbo", "gpt-35-turbo-16k", "text-embedding-3-small",
    "text-embedding-ada-002", "davinci-002", "ft:davinci-002:org::id", "ft:gpt-4o-mini:org::id",
    "ft:gpt-4-0613:org::id", "ft:gpt-3.5-turbo:org::id", "o1", "o1-mini", "o3-mini", "o4-mini",
    "o4-mini-2025", "gpt-5", "gpt-5-nano", "gpt-4.1", "gpt-4.1-mini", "gpt-4.5-preview", "text-davinci-003",
    "code-davinci-002", "text-davinci-edit-001", "davinci", "text-similarity-ada-001",
    "code-search-ada-code-001", "gpt2", "gpt-2",
]


def test_encoding_for_model_matches_tiktoken():
    tiktoken_model = pytest.importorskip("tiktoken.model")
    for model in MODELS_TO_CHECK:
        assert cybpe.encoding_name_for_model(model) == tiktoken_model.encoding_name_for_model(model), model
    for model in ("gpt-3", "llama-3", "claude", "", "GPT-4"):
        with pytest.raises(KeyError):
            tiktoken_model.encoding_name_for_model(model)
        with pytest.raises(UnknownEncodingError):
            cybpe.encoding_name_for_model(model)
    # The whole tables.
    table = {m: n for n, models in MODELS.items() for m in models}
    assert table == tiktoken_model.MODEL_TO_ENCODING
    prefixes = {p: n for n, ps in MODEL_PREFIXES.items() for p in ps}
    assert prefixes == tiktoken_model.MODEL_PREFIX_TO_ENCODING


def test_encoding_for_model_returns_the_encoding(places, vocab_dir, monkeypatch):
    monkeypatch.setenv("CYBPE_ENCODINGS_DIR", str(vocab_dir))
    assert cybpe.encoding_for_model("gpt-4o-mini") is cybpe.get_encoding("o200k_base")


def test_from_tiktoken_recognises_a_cache_file(places, vocab_dir, tmp_path):
    sha1 = hashlib.sha1(CL100K_URL.encode()).hexdigest()
    cached = places.cache / sha1
    shutil.copy(vocab_dir / "cl100k_base.tiktoken", cached)
    tok = cybpe.Tokenizer.from_tiktoken(cached)
    assert tok.name == "cl100k_base" and tok.eot_token == 100257
    assert tok.encode("<|fim_prefix|>x", allowed_special="all") == [100258, 87]
    # any copy with the registered sha256, under any name
    other = tmp_path / "renamed.bin"
    shutil.copy(vocab_dir / "o200k_base.tiktoken", other)
    assert cybpe.Tokenizer.from_tiktoken(other).name == "o200k_base"
    # a file under cl100k's cache name that is not cl100k's file: refused, not guessed
    cached.write_bytes((vocab_dir / "cl100k_base.tiktoken").read_bytes()[:-100])
    with pytest.raises(HashMismatchError):
        cybpe.Tokenizer.from_tiktoken(cached)


# ------------------------------------------------------------------------------- plugins
def _tiny_tiktoken_file(path: Path) -> tuple[Path, str]:
    tok = cybpe.train(["hello world, hello tokens " * 20, "more words here " * 10], 300, "cl100k", progress=False)
    tok.to_tiktoken(path)
    return path, _sha256(path)


def _plugin(name: str, file: EncodingFile, models=(), prefixes=()):
    module = types.ModuleType(f"plugin_{name}")

    @cybpe.hookimpl
    def cybpe_register_encodings(register):
        """A test encoding."""
        register(name, files=[file], models=models, model_prefixes=prefixes,
                 build=lambda path: cybpe.Tokenizer.from_tiktoken(path, "cl100k", {"<|endoftext|>": 300}))

    module.cybpe_register_encodings = cybpe_register_encodings
    return module


def test_a_plugin_adds_an_encoding(places, tmp_path):
    (places.encodings / "tiny").mkdir()
    path, digest = _tiny_tiktoken_file(places.encodings / "tiny" / "tiny_base.tiktoken")
    plugin = _plugin("tiny_base", EncodingFile("tiny/tiny_base.tiktoken", digest), models=["tiny-1"],
                     prefixes=["tiny-2-"])
    with pytest.raises(UnknownEncodingError):
        cybpe.get_encoding("tiny_base")
    name = cybpe.register_plugin(plugin, "tiny-plugin")
    try:
        assert "tiny_base" in cybpe.list_encoding_names()
        enc = cybpe.get_encoding("tiny_base")
        assert enc.name == "tiny_base" and enc.eot_token == 300 and enc.n_vocab == 301
        assert enc.decode(enc.encode("hello world")) == "hello world"
        assert cybpe.encoding_for_model("tiny-1") is enc is cybpe.encoding_for_model("tiny-2-large")
        same_name = _plugin("tiny_base", EncodingFile("tiny/tiny_base.tiktoken", digest))
        same_model = _plugin("tiny_other", EncodingFile("tiny/tiny_base.tiktoken", digest), models=["gpt-4o"])
        for plugin_name, clash, lookup, match in (
                ("tiny-duplicate", same_name, lambda: cybpe.get_encoding("tiny_base"), "tiny-plugin"),
                ("tiny-clash", same_model, lambda: cybpe.encoding_name_for_model("gpt-4o"), "gpt-4o")):
            cybpe.register_plugin(clash, plugin_name)
            try:
                with pytest.raises(DuplicateEncodingError, match=match):
                    lookup()
            finally:
                cybpe.unregister_plugin(plugin_name)
            assert cybpe.get_encoding("tiny_base") is enc
    finally:
        cybpe.unregister_plugin(name)
    with pytest.raises(UnknownEncodingError):
        cybpe.get_encoding("tiny_base")
    assert cybpe.encoding_name_for_model("gpt-4o") == "o200k_base"


def test_a_plugin_build_that_breaks_is_a_plugin_error(places):
    path = places.encodings / "broken.tiktoken"
    path.write_bytes(b"AA== 0\n")
    module = types.ModuleType("plugin_broken")

    @cybpe.hookimpl
    def cybpe_register_encodings(register):
        register("broken_base", files=[EncodingFile("broken.tiktoken", _sha256(path))], build=lambda p: 42)

    module.cybpe_register_encodings = cybpe_register_encodings
    cybpe.register_plugin(module, "broken-plugin")
    try:
        with pytest.raises(cybpe.errors.PluginError, match="not a cybpe.Tokenizer"):
            cybpe.get_encoding("broken_base")
    finally:
        cybpe.unregister_plugin("broken-plugin")


def test_encoding_file_is_checked():
    with pytest.raises(cybpe.errors.InvalidParameterError):
        EncodingFile("../x.tiktoken", "0" * 64)
    with pytest.raises(cybpe.errors.InvalidParameterError):
        EncodingFile("x.tiktoken", "ABC")
    assert EncodingFile("x", "0" * 64, CL100K_URL).cache_name == hashlib.sha1(CL100K_URL.encode()).hexdigest()


# ------------------------------------------------------------------- download (127.0.0.1 only)
class _Server:
    """A static file server on 127.0.0.1 in a thread; counts the requests it answers."""

    def __init__(self, root: Path) -> None:
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

            def do_GET(self):
                outer.requests.append(self.path)
                super().do_GET()

        self.requests: list[str] = []
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     functools.partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    srv = _Server(root)
    srv.root = root
    yield srv
    srv.close()


def test_download_fetches_checks_and_writes_tiktokens_cache(places, vocab_dir, server):
    (server.root / "encodings").mkdir()
    shutil.copy(vocab_dir / "cl100k_base.tiktoken", server.root / "encodings" / "cl100k_base.tiktoken")
    paths = cybpe.download("cl100k_base", base_url=server.url)
    sha1 = hashlib.sha1(CL100K_URL.encode()).hexdigest()
    assert paths == [str(places.cache / sha1)]
    assert server.requests == ["/encodings/cl100k_base.tiktoken"]
    assert _sha256(places.cache / sha1) == PUBLISHED_SHA256["cl100k_base.tiktoken"]
    assert [p.name for p in places.cache.iterdir()] == [sha1]  # no temporary file left
    assert cybpe.get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert cybpe.download("cl100k_base", base_url=server.url) == paths  # present: not fetched again
    assert len(server.requests) == 1


def test_download_into_a_directory(places, vocab_dir, server, tmp_path):
    (server.root / "gpt-2" / "encodings" / "main").mkdir(parents=True)
    for name in ("vocab.bpe", "encoder.json"):
        shutil.copy(vocab_dir / "gpt2" / name, server.root / "gpt-2" / "encodings" / "main" / name)
    target = tmp_path / "mine"
    paths = cybpe.download("gpt2", directory=target, base_url=server.url)
    assert paths == [str(target / "gpt2" / "vocab.bpe"), str(target / "gpt2" / "encoder.json")]
    assert list(places.cache.iterdir()) == []


def test_download_refuses_wrong_bytes_and_errors(places, vocab_dir, server):
    (server.root / "encodings").mkdir()
    shutil.copy(vocab_dir / "o200k_base.tiktoken", server.root / "encodings" / "cl100k_base.tiktoken")
    with pytest.raises(HashMismatchError, match="nothing was written"):
        cybpe.download("cl100k_base", base_url=server.url)
    assert list(places.cache.iterdir()) == []
    with pytest.raises(DownloadError, match="404"):
        cybpe.download("r50k_base", base_url=server.url)
    with pytest.raises(DownloadError, match="no download address"):
        cybpe.download("qwen3")
    with pytest.raises(UnknownEncodingError):
        cybpe.download("nope")
    with pytest.raises(cybpe.errors.InvalidParameterError):
        cybpe.download("cl100k_base", base_url="127.0.0.1")


def test_download_of_a_plugin_encoding_from_its_own_address(places, server, tmp_path):
    path, digest = _tiny_tiktoken_file(server.root / "tiny_base.tiktoken")
    plugin = _plugin("tiny_served", EncodingFile("tiny_served.tiktoken", digest, server.url + "tiny_base.tiktoken"))
    cybpe.register_plugin(plugin, "tiny-served")
    try:
        with pytest.raises(MissingEncodingFileError):
            cybpe.get_encoding("tiny_served")
        assert server.requests == []
        cybpe.download("tiny_served")
        assert cybpe.get_encoding("tiny_served").n_vocab == 301
    finally:
        cybpe.unregister_plugin("tiny-served")


def test_an_installed_package_adds_encodings_through_its_entry_point(tmp_path):
    """The tiktoken_ext way: a package installed by pip, found through ``cybpe.encodings``."""

    source = tmp_path / "src"
    source.mkdir()
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "cybpe-acme-encodings"\nversion = "0.3.0"\ndependencies = ["cybpe"]\n'
        '[project.entry-points."cybpe.encodings"]\nacme = "cybpe_acme_encodings"\n'
        '[tool.setuptools]\npy-modules = ["cybpe_acme_encodings"]\n')
    (tmp_path / "data").mkdir()
    _, digest = _tiny_tiktoken_file(tmp_path / "data" / "acme_base.tiktoken")
    (source / "cybpe_acme_encodings.py").write_text(
        "import cybpe\nfrom cybpe.encodings import EncodingFile\n\n"
        "@cybpe.hookimpl\ndef cybpe_register_encodings(register):\n"
        "    '''Acme's encodings.'''\n"
        f"    register('acme_base', files=[EncodingFile('acme_base.tiktoken', {digest!r})], models=['acme-1'],\n"
        "             build=lambda path: cybpe.Tokenizer.from_tiktoken(path, 'cl100k', {'<|endoftext|>': 300}))\n")
    site = tmp_path / "site"
    built = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                            "--no-index", "--target", str(site), str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    code = ("import cybpe, json\nfrom cybpe.encodings.registry import list_encodings\n"
            "enc = cybpe.encoding_for_model('acme-1')\n"
            "info = [i for i in list_encodings() if i['name'] == 'acme_base'][0]\n"
            "print(json.dumps([enc.name, enc.eot_token, enc.decode(enc.encode('hello world')), info['distribution'],"
            " info['version'], info['plugin']]))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
               CYBPE_ENCODINGS_DIR=str(tmp_path / "data"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["acme_base", 300, "hello world", "cybpe-acme-encodings", "0.3.0", "acme"]
    blocked = subprocess.run([sys.executable, "-c", "import cybpe; print(cybpe.list_encoding_names())"],
                             capture_output=True, text=True, cwd=tmp_path,
                             env=dict(env, CYBPE_DISABLE_PLUGIN_AUTOLOAD="1"))
    assert blocked.returncode == 0, blocked.stderr
    assert "acme_base" not in blocked.stdout and "cl100k_base" in blocked.stdout
