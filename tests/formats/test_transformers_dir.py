"""transformers tokenizer directories: ``save_pretrained`` / ``from_pretrained``, token roles and
non-special added tokens, checked against transformers and HF tokenizers themselves.

Runs under transformers 5.x (the ``test`` extra) and, in CI, 4.x too
(``.ci/stage-transformers4.sh``: the two majors cannot share one environment). The real Llama 3 / Qwen3 / GPT-4o folders and the evaluation corpora come from the
shared folder (skipped with a reason when it is absent); the trained tokenizer from the UDHR
sample that ships with cybpe.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import threading
from pathlib import Path

import pytest

import cybpe
from cybpe.errors import ExportError, FormatError, InvalidParameterError, SaveError
from cybpe.formats.vocab import Vocab
from support import UDHR_DIR, eval_texts

UDHR = [p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))]
SPECIALS = ["<|endoftext|>", "<|pad|>", "<think>", "</think>"]
HOSTILE = [
    "", " ", "\n\n", "a<|endoftext|>b", "<|pad|><|pad|>", "x<think>y</think>z", "<think",
    "  leading and trailing  ", "1234567 89 3.14159", "naïve café Ω≈ç√ 東京 🙂🙂", "\u200d\u0301",
    "tab\tnew\r\nline", "<|endoftext|", "<<think>>", "</think><think>",
]


def _transformers():
    # Local folders only: the hub is never asked (set before huggingface_hub reads it).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return pytest.importorskip("transformers", reason="transformers is in the test extra")


@pytest.fixture(scope="module")
def trained():
    """A tokenizer trained here, with roles and two non-special added tokens."""
    tok = cybpe.train(UDHR, 1200, "cl100k", SPECIALS, progress=False)
    tok = cybpe.Tokenizer(tok.vocab, tok.pretokenizer, non_special_tokens=["<think>", "</think>"],
                          bos_token="<|endoftext|>", eos_token="<|endoftext|>", pad_token="<|pad|>",
                          model_max_length=4096)
    return tok


@pytest.fixture(scope="module")
def saved(trained, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pretrained") / "tok"
    trained.save_pretrained(folder)
    return folder


def _eval_texts(shared_dir, size=20_000):
    return eval_texts(shared_dir, size)


# --------------------------------------------------------------------------- round trip


def test_saved_directory_files(saved, trained):
    assert sorted(os.listdir(saved)) == ["special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]
    config = json.loads((saved / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert (config["bos_token"], config["eos_token"], config["pad_token"], config["unk_token"]) == (
        "<|endoftext|>", "<|endoftext|>", "<|pad|>", None)
    assert config["model_max_length"] == 4096
    flags = {v["content"]: v["special"] for v in config["added_tokens_decoder"].values()}
    assert flags == {"<|endoftext|>": True, "<|pad|>": True, "<think>": False, "</think>": False}
    doc = json.loads((saved / "tokenizer.json").read_text())
    assert {a["content"]: a["special"] for a in doc["added_tokens"]} == flags
    special_map = json.loads((saved / "special_tokens_map.json").read_text())
    assert special_map == {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|pad|>"}


@pytest.mark.parametrize("loader", ["AutoTokenizer", "PreTrainedTokenizerFast"])
def test_transformers_loads_saved_directory(saved, trained, loader):
    transformers = _transformers()
    hf = getattr(transformers, loader).from_pretrained(str(saved))
    assert (hf.bos_token, hf.eos_token, hf.pad_token, hf.unk_token) == (
        trained.bos_token, trained.eos_token, trained.pad_token, trained.unk_token)
    assert (hf.bos_token_id, hf.eos_token_id, hf.pad_token_id) == (
        trained.bos_token_id, trained.eos_token_id, trained.pad_token_id)
    assert hf.model_max_length == 4096
    assert len(hf) == trained.n_vocab
    for text in UDHR[:6] + HOSTILE:
        # tokenizer(text) with its defaults: no BOS/EOS is added, every added token is matched
        assert hf(text)["input_ids"] == trained.encode(text, allowed_special="all"), text[:40]
        assert hf.decode(trained.encode(text, allowed_special="all")) == text
    assert hf.decode(trained.encode("a<|pad|>b<think>", allowed_special="all"), skip_special_tokens=True) == "ab<think>"


def test_round_trip_real_text_and_padding(saved, trained, shared_dir):
    transformers = _transformers()
    hf = transformers.AutoTokenizer.from_pretrained(str(saved))
    texts = _eval_texts(shared_dir)
    for name, text in texts:
        assert hf(text)["input_ids"] == trained.encode(text), name
    batch = [text[:400 * (k + 1)] for k, (_, text) in enumerate(texts[:5])] + ["", "a<|pad|>"]
    padded = hf(batch, padding=True)
    ids, mask = trained.encode_batch_to_numpy(batch, pad_id=trained.pad_token_id, allowed_special="all")
    assert padded["input_ids"] == ids.tolist()
    assert padded["attention_mask"] == mask.tolist()
    assert len({len(row) for row in padded["input_ids"]}) == 1 and len(padded["input_ids"][0]) > 100


def test_padding_needs_a_pad_role(trained, tmp_path):
    transformers = _transformers()
    bare = cybpe.Tokenizer(trained.vocab, trained.pretokenizer)
    bare.save_pretrained(tmp_path / "bare")
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "bare"))
    assert hf.pad_token is None
    with pytest.raises(ValueError):
        hf(["a", "bcd efg"], padding=True)
    bare.set_roles(pad_token="<|pad|>")
    bare.save_pretrained(tmp_path / "bare")  # saving over the old folder
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "bare"))
    assert hf(["a", "bcd efg"], padding=True)["input_ids"][0][-1] == bare.pad_token_id


def test_cybpe_reads_its_own_directory(saved, trained):
    for loaded in (cybpe.Tokenizer.from_pretrained(saved), cybpe.Tokenizer.from_hf(saved)):
        # (read back as ranks: to_hf wrote every split, which encodes as the ranks do)
        assert loaded.vocab.tokens == trained.vocab.tokens
        assert loaded.special_tokens == trained.special_tokens
        assert loaded.roles == trained.roles
        assert loaded.non_special_tokens == {"<think>", "</think>"}
        assert loaded.model_max_length == 4096
        for text in HOSTILE:
            assert loaded.encode(text, allowed_special="all") == trained.encode(text, allowed_special="all")


# --------------------------------------------------------------------------- non-special added tokens


def test_non_special_tokens_do_not_raise(trained):
    think = trained.vocab.special_tokens["<think>"]
    ids = trained.encode("x<think>y")
    assert think in ids  # matched as HF matches it
    with pytest.raises(cybpe.errors.DisallowedSpecialTokenError):
        trained.encode("x<|pad|>y")  # a special still raises by default
    assert think not in trained.encode_ordinary("x<think>y")  # encode_ordinary: all added tokens are text
    assert trained.encode("x<think>y", disallowed_special=()) == ids
    with pytest.raises(cybpe.errors.DisallowedSpecialTokenError):
        trained.encode("x<think>y", disallowed_special={"<think>"})
    assert trained.encode_batch(["x<think>y"] * 3) == [ids] * 3
    ids_np, _ = trained.encode_batch_to_numpy(["x<think>y"], pad_id=0)
    assert ids_np[0].tolist() == ids


def test_non_special_tokens_match_hf_tokenizers(saved, trained):
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(saved / "tokenizer.json"))
    for text in HOSTILE + [" ".join(UDHR[0].split()[:200]) + " <think> " + UDHR[1][:500]]:
        # default encode = HF matching every added token, once the specials are allowed
        assert hf.encode(text, add_special_tokens=False).ids == trained.encode(text, allowed_special="all")
        # specials as text, non-special added tokens still matched = HF's encode_special_tokens
        hf.encode_special_tokens = True
        try:
            assert hf.encode(text, add_special_tokens=False).ids == trained.encode(text, disallowed_special=())
        finally:
            hf.encode_special_tokens = False


# --------------------------------------------------------------------------- real directories


REAL = {
    # folder: (bos, eos, unk, pad, some non-special added tokens, model_max_length)
    "llama3": ("<|begin_of_text|>", "<|end_of_text|>", None, None, set(), 10**30),
    "qwen3": (None, "<|im_end|>", None, "<|endoftext|>", {"<tool_call>", "</tool_call>", "<think>"}, 131072),
    "gpt4o-hf": ("<|endoftext|>", "<|endoftext|>", "<|endoftext|>", None, set(), 128000),
}


@pytest.fixture(scope="module")
def real_tokenizers(shared_dir):
    return {name: cybpe.Tokenizer.from_pretrained(shared_dir / "vocab" / name) for name in REAL}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_directory_roles(real_tokenizers, shared_dir, name):
    tok = real_tokenizers[name]
    bos, eos, unk, pad, plain, limit = REAL[name]
    assert (tok.bos_token, tok.eos_token, tok.unk_token, tok.pad_token) == (bos, eos, unk, pad)
    assert tok.eos_token_id == tok.vocab.special_tokens[eos]
    assert plain <= tok.non_special_tokens
    config = json.loads((shared_dir / "vocab" / name / "tokenizer.json").read_text(encoding="utf-8"))
    flags = {a["content"]: a["special"] for a in config["added_tokens"]}
    assert tok.non_special_tokens == {t for t, special in flags.items() if not special}
    assert tok.model_max_length is not None and abs(tok.model_max_length - limit) <= limit // 10**6


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_directory_ids_equal_hf(real_tokenizers, shared_dir, name):
    tokenizers = pytest.importorskip("tokenizers")
    tok = real_tokenizers[name]
    hf = tokenizers.Tokenizer.from_file(str(shared_dir / "vocab" / name / "tokenizer.json"))
    added = sorted(tok.vocab.special_tokens, key=tok.vocab.special_tokens.get)
    with_added = [f"a{added[0]}b {added[-1]} x{t}y" for t in added[:40]]
    for label, text in _eval_texts(shared_dir, 10_000) + [(t, t) for t in HOSTILE + with_added]:
        assert hf.encode(text, add_special_tokens=False).ids == tok.encode(text, allowed_special="all"), label
    if tok.non_special_tokens:  # Qwen3: text with only non-special added tokens encodes by default
        text = "call <tool_call>{\"name\": \"f\"}</tool_call> then <think>hm</think>"
        assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids
        assert tok.vocab.special_tokens["<tool_call>"] in tok.encode(text)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_directory_as_transformers_reads_it(real_tokenizers, shared_dir, name, tmp_path):
    transformers = _transformers()
    tok = real_tokenizers[name]
    # The GPT-4o folder names GPT2Tokenizer, which transformers 5 rebuilds with GPT-2's own
    # pre-tokenizer instead of the file's (so "12345" splits differently); the generic class
    # reads tokenizer.json as it is, as cybpe and HF tokenizers do.
    loader = transformers.PreTrainedTokenizerFast if name == "gpt4o-hf" else transformers.AutoTokenizer
    hf = loader.from_pretrained(str(shared_dir / "vocab" / name))
    assert (hf.bos_token, hf.eos_token, hf.pad_token) == (tok.bos_token, tok.eos_token, tok.pad_token)
    texts = [t for _, t in _eval_texts(shared_dir, 3_000)] + HOSTILE
    for text in texts:
        assert hf(text, add_special_tokens=False)["input_ids"] == tok.encode(text, allowed_special="all")
    # and cybpe's own save of it loads in transformers with the same ids and roles (the save
    # keeps the config's tokenizer_class, so the same loader reads it as it read the original:
    # tests/compat/test_transformers_roundtrip.py compares AutoTokenizer on both)
    tok.save_pretrained(tmp_path / name)
    again = loader.from_pretrained(str(tmp_path / name))
    assert (again.bos_token, again.eos_token, again.pad_token) == (hf.bos_token, hf.eos_token, hf.pad_token)
    for text in texts:
        assert again(text, add_special_tokens=False)["input_ids"] == tok.encode(text, allowed_special="all")


# --------------------------------------------------------------------------- roles and persistence


def test_roles_api(trained):
    tok = cybpe.Tokenizer(trained.vocab, trained.pretokenizer)
    assert tok.roles == dict.fromkeys(["bos_token", "eos_token", "unk_token", "pad_token"])
    assert tok.pad_token_id is None
    tok.set_roles(pad_token="<|pad|>", eos_token="<|endoftext|>")
    assert (tok.pad_token, tok.pad_token_id) == ("<|pad|>", trained.vocab.special_tokens["<|pad|>"])
    with pytest.raises(InvalidParameterError, match="not an added token"):
        tok.set_roles(bos_token="<s>", pad_token=None)
    assert tok.pad_token == "<|pad|>" and tok.bos_token is None  # a refused call changes nothing
    tok.set_roles(pad_token=None)
    assert tok.pad_token is None and tok.eos_token == "<|endoftext|>"
    with pytest.raises(InvalidParameterError, match="not an added token"):
        cybpe.Tokenizer(trained.vocab, trained.pretokenizer, unk_token="the")  # ordinary text: no role
    with pytest.raises(InvalidParameterError):
        cybpe.Tokenizer(trained.vocab, trained.pretokenizer, non_special_tokens=["<nope>"])
    with pytest.raises(InvalidParameterError):
        cybpe.Tokenizer(trained.vocab, trained.pretokenizer, model_max_length=0)
    with pytest.raises(TypeError):
        cybpe.Tokenizer(trained.vocab, trained.pretokenizer, non_special_tokens="<think>")
    tok.model_max_length = 2048
    with pytest.raises(InvalidParameterError, match="model_max_length"):
        tok.model_max_length = 2.5
    assert tok.model_max_length == 2048


def test_set_roles_from_threads(trained):
    tok = cybpe.Tokenizer(trained.vocab, trained.pretokenizer)
    pairs = [("<|pad|>", "<|pad|>"), ("<|endoftext|>", "<|endoftext|>")]
    seen, stop = set(), threading.Event()

    def write():
        for k in range(2000):
            a, b = pairs[k % 2]
            tok.set_roles(bos_token=a, eos_token=b)
        stop.set()

    writer = threading.Thread(target=write)
    writer.start()
    while not stop.is_set():
        roles = tok.roles
        seen.add((roles["bos_token"], roles["eos_token"]))
    writer.join()
    assert seen <= set(pairs) | {(None, None)}  # a snapshot is never half old, half new


def test_native_format_keeps_roles(trained, tmp_path):
    trained.save(tmp_path / "tok.json")
    doc = json.loads((tmp_path / "tok.json").read_text())
    assert doc["version"] == 2 and doc["roles"]["pad_token"] == "<|pad|>"
    loaded = cybpe.Tokenizer.load(tmp_path / "tok.json")
    assert loaded.roles == trained.roles and loaded.non_special_tokens == trained.non_special_tokens
    assert loaded.model_max_length == 4096
    again = pickle.loads(pickle.dumps(trained))
    assert again.roles == trained.roles and again.non_special_tokens == trained.non_special_tokens
    # a tokenizer without the new fields is still written as version 1 (older cybpe reads it)
    plain = cybpe.Tokenizer(trained.vocab, trained.pretokenizer)
    plain.save(tmp_path / "plain.json")
    assert json.loads((tmp_path / "plain.json").read_text())["version"] == 1
    assert cybpe.Tokenizer.load(tmp_path / "plain.json").roles == plain.roles


def test_old_native_file_with_hf_special_metadata(trained, tmp_path):
    """Files saved before version 2 kept HF's special flags as metadata["hf_special"]."""
    trained.save(tmp_path / "tok.json")
    doc = json.loads((tmp_path / "tok.json").read_text())
    for key in ("roles", "non_special_tokens", "model_max_length"):
        del doc[key]
    doc["version"] = 1
    doc["metadata"]["hf_special"] = ["<|endoftext|>", "<|pad|>"]
    (tmp_path / "old.json").write_text(json.dumps(doc))
    old = cybpe.Tokenizer.load(tmp_path / "old.json")
    assert old.non_special_tokens == {"<think>", "</think>"} and old.pad_token is None
    assert "hf_special" not in old.metadata
    state = pickle.loads(pickle.dumps(trained)).__getstate__()
    state = {k: v for k, v in state.items() if k not in ("roles", "non_special_tokens", "model_max_length")}
    state["state_version"] = 1
    restored = cybpe.Tokenizer.__new__(cybpe.Tokenizer)
    restored.__setstate__(state)
    assert restored.roles["pad_token"] is None and restored == trained


def test_native_hostile_fields(trained, tmp_path):
    trained.save(tmp_path / "tok.json")
    doc = json.loads((tmp_path / "tok.json").read_text())
    for key, value, needle in [("roles", {"pad_token": "<nope>"}, "not an added token"),
                               ("roles", {"mask_token": "<|pad|>"}, "roles"),
                               ("roles", ["x"], "roles"),
                               ("non_special_tokens", "<think>", "non_special_tokens"),
                               ("non_special_tokens", ["<nope>"], "not added tokens"),
                               ("model_max_length", -1, "model_max_length")]:
        bad = dict(doc, **{key: value})
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(FormatError, match=needle):
            cybpe.Tokenizer.load(tmp_path / "bad.json")


# --------------------------------------------------------------------------- hostile directories


def _copy_saved(saved, tmp_path) -> Path:
    folder = tmp_path / "copy"
    shutil.copytree(saved, folder)
    return folder


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_missing_files(saved, tmp_path):
    with pytest.raises(FormatError, match="not a directory"):
        cybpe.Tokenizer.from_pretrained(tmp_path / "absent")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FormatError, match="no tokenizer.json"):
        cybpe.Tokenizer.from_pretrained(empty)
    with pytest.raises(FormatError, match="no tokenizer.json"):
        cybpe.Tokenizer.from_hf(empty)
    # the two config files are optional (transformers 5 loads a bare tokenizer.json too)
    folder = _copy_saved(saved, tmp_path)
    (folder / "tokenizer_config.json").unlink()
    (folder / "special_tokens_map.json").unlink()
    bare = cybpe.Tokenizer.from_pretrained(folder)
    assert bare.pad_token is None and bare.non_special_tokens == {"<think>", "</think>"}


@pytest.mark.parametrize("file, change, needle", [
    ("special_tokens_map.json", lambda d: d.__setitem__("pad_token", "<mask>"), "pad_token '<mask>' is not an added token"),
    ("tokenizer_config.json", lambda d: d.__setitem__("bos_token", "the"), "bos_token 'the' is not an added token"),
    ("special_tokens_map.json", lambda d: d.__setitem__("unk_token", {"content": "<unk>"}), "unk_token '<unk>'"),
    ("tokenizer_config.json", lambda d: d.__setitem__("eos_token", 7), "eos_token is not a token string"),
    ("tokenizer_config.json", lambda d: d.__setitem__("additional_special_tokens", ["<x>"]), "'<x>' is not an added token"),
    ("tokenizer_config.json", lambda d: d.__setitem__("extra_special_tokens", {"a": "<y>"}), "'<y>' is not an added token"),
    ("tokenizer_config.json", lambda d: d.__setitem__("extra_special_tokens", 3), "extra_special_tokens"),
    ("tokenizer_config.json", lambda d: d["added_tokens_decoder"].__setitem__("5", {"content": "<|pad|>"}), "does not match"),
    ("tokenizer_config.json", lambda d: d.__setitem__("model_max_length", "big"), "model_max_length"),
    ("tokenizer_config.json", lambda d: d.clear() or d.__setitem__("x", []), None),
])
def test_hostile_configs(saved, tmp_path, file, change, needle):
    folder = _copy_saved(saved, tmp_path)
    if file == "tokenizer_config.json":  # the map would win over a legacy config's roles
        (folder / "special_tokens_map.json").unlink()
    else:  # transformers 5.x reads the map only beside a config without added_tokens_decoder
        _edit(folder / "tokenizer_config.json", lambda d: d.pop("added_tokens_decoder"))
    _edit(folder / file, change)
    if needle is None:  # an unrelated key only: loads
        cybpe.Tokenizer.from_pretrained(folder)
        return
    with pytest.raises(FormatError, match=needle.replace("(", r"\(").replace("|", r"\|")):
        cybpe.Tokenizer.from_pretrained(folder)


def test_special_tokens_map_wins_over_a_legacy_config(saved, tmp_path):
    # transformers 5.x: the map is read, and wins, only when the config has no
    # added_tokens_decoder (tests/formats/test_hf_added_round2.py compares with transformers)
    folder = _copy_saved(saved, tmp_path)
    _edit(folder / "tokenizer_config.json", lambda d: d.__setitem__("pad_token", "<nope>"))
    with pytest.raises(FormatError, match="<nope>"):  # the config decides: it names no token
        cybpe.Tokenizer.from_pretrained(folder)
    _edit(folder / "tokenizer_config.json", lambda d: d.pop("added_tokens_decoder"))
    assert cybpe.Tokenizer.from_pretrained(folder).pad_token == "<|pad|>"
    _edit(folder / "special_tokens_map.json", lambda d: d.__setitem__("pad_token", "<|endoftext|>"))
    assert cybpe.Tokenizer.from_pretrained(folder).pad_token == "<|endoftext|>"


def test_config_that_is_not_an_object(saved, tmp_path):
    folder = _copy_saved(saved, tmp_path)
    (folder / "tokenizer_config.json").write_text("[1, 2]")
    with pytest.raises(FormatError, match="not a JSON object"):
        cybpe.Tokenizer.from_pretrained(folder)
    (folder / "tokenizer_config.json").write_text("{broken")
    with pytest.raises(FormatError, match="invalid JSON"):
        cybpe.Tokenizer.from_pretrained(folder)


def test_config_flags_and_extras_make_tokens_special(saved, tmp_path):
    folder = _copy_saved(saved, tmp_path)
    _edit(folder / "tokenizer_config.json",
          lambda d: d.__setitem__("additional_special_tokens", [{"content": "<think>", "special": True}]))
    tok = cybpe.Tokenizer.from_pretrained(folder)
    assert tok.non_special_tokens == {"</think>"}
    with pytest.raises(cybpe.errors.DisallowedSpecialTokenError):
        tok.encode("<think>")


def test_refused_export_writes_nothing(trained, tmp_path):
    refined = cybpe.PreTokenizer("refined-example", r"\S+|\s+", refine=lambda pieces: pieces)
    tok = cybpe.Tokenizer(trained.vocab, refined, pad_token="<|pad|>")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("old")
    with pytest.raises(ExportError):
        tok.save_pretrained(folder)
    assert sorted(os.listdir(folder)) == ["tokenizer.json"]
    assert (folder / "tokenizer.json").read_text() == "old"


def test_failed_write_leaves_old_directory(saved, trained, tmp_path, monkeypatch):
    from cybpe.formats import transformers_dir

    folder = _copy_saved(saved, tmp_path)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    real = transformers_dir.atomic_write_text

    def failing(path, text):
        if "special_tokens_map" in os.fspath(path):
            raise OSError(28, "No space left on device")
        real(path, text)

    monkeypatch.setattr(transformers_dir, "atomic_write_text", failing)
    other = cybpe.Tokenizer(trained.vocab, trained.pretokenizer, eos_token="<|pad|>")
    with pytest.raises(SaveError, match="No space left"):
        other.save_pretrained(folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # no temporary file either


def test_save_destination_errors(trained, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(SaveError, match="not a directory"):
        trained.save_pretrained(tmp_path / "file")
    folder = tmp_path / "d"
    (folder / "tokenizer.json").mkdir(parents=True)
    with pytest.raises(SaveError, match="not a regular file"):
        trained.save_pretrained(folder)
    other = tmp_path / "e"
    other.mkdir()
    (other / "added_tokens.json").write_text("{}")
    with pytest.raises(SaveError, match="added_tokens.json"):
        trained.save_pretrained(other)
    assert sorted(os.listdir(other)) == ["added_tokens.json"]
