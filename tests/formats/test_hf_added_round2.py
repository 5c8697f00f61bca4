"""Added tokens and roles of HF files: cybpe gives HF's result or refuses (issue 39, items 5-7).

* ``added_tokens[].id``: HF tokenizers does not trust it (it numbers the tokens itself and only
  logs a warning); cybpe must give every added token HF's id, or raise FormatError.
* ``"normalized": true``: HF matches such tokens in the normalized text, in a second pass;
  cybpe must encode as HF does, or raise FormatError.
* roles: when ``tokenizer_config.json`` and ``special_tokens_map.json`` disagree, cybpe must
  give transformers 5.x's roles.

Each is checked against the installed tokenizers / transformers, on small generated files (fast)
and on the shared Llama 3 / Qwen3 files (slow).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

import cybpe
from cybpe.errors import FormatError
from support import SKIP_REASON, shared_path

hf_tokenizers = pytest.importorskip("tokenizers")

CORPUS = "hello world, the quick brown fox jumps over the lazy dog. été école 12345 " * 20
TEXTS = ["hello world <|a|> x<|b|>y <|c|> hello", "xab abc ab b a", "<|a|><|a|><|b|>hello",
         "e\u0301te\u0301 été", "the quick <|d|> brown", "hellohello helloworld"]


@pytest.fixture(scope="module")
def base_doc(tmp_path_factory) -> dict:
    tok = cybpe.train([CORPUS], 300, progress=False)
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    tok.to_hf(path)
    return json.loads(path.read_text(encoding="utf-8"))


def _entry(content: str, tid: int, **flags) -> dict:
    out = {"id": tid, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
           "normalized": False, "special": True}
    out.update(flags)
    return out


def _write(tmp_path: Path, doc: dict, name: str = "tokenizer.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def _agree_or_refuse(path: Path, texts=TEXTS) -> str:
    """'refused' when cybpe raises FormatError, else 'same' after checking every added
    token's id and the encoding of ``texts`` against HF tokenizers."""
    try:
        ours = cybpe.Tokenizer.from_hf(path)
    except FormatError:
        return "refused"
    theirs = hf_tokenizers.Tokenizer.from_file(str(path))
    doc = json.loads(path.read_text(encoding="utf-8"))
    for entry in doc["added_tokens"]:
        content = entry["content"]
        assert ours.special_tokens.get(content, theirs.token_to_id(content)) == theirs.token_to_id(content), content
    for text in texts:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, add_special_tokens=False).ids, text
    return "same"


# -------------------------------------------------------------------------- 5: added token ids


def test_added_token_ids_follow_hf_on_the_issue_cases(tmp_path, base_doc):
    size = len(base_doc["model"]["vocab"])
    # a token numbered past the next free id: HF renumbers it
    doc = dict(base_doc, added_tokens=[_entry("<|a|>", size + 1000)])
    path = _write(tmp_path, doc)
    assert _agree_or_refuse(path) == "same"
    assert cybpe.Tokenizer.from_hf(path).special_tokens["<|a|>"] == size
    # an added token that is also an ordinary token: HF uses the ordinary id; cybpe refuses
    word = max((s for s in base_doc["model"]["vocab"] if s.isalpha() and s.isascii()), key=len)
    assert len(word) >= 3
    doc = dict(base_doc, added_tokens=[_entry(word, size)])
    path = _write(tmp_path, doc)
    with pytest.raises(FormatError, match=word):
        cybpe.Tokenizer.from_hf(path)
    # ... unless the file gives it that same id: then HF and cybpe agree
    doc = dict(base_doc, added_tokens=[_entry(word, base_doc["model"]["vocab"][word])])
    assert _agree_or_refuse(_write(tmp_path, doc), TEXTS + [f"x{word}y {word}{word}"]) in ("same", "refused")


def _random_added(rng: random.Random, vocab: dict) -> tuple[list[dict], dict]:
    size = len(vocab)
    names = ["<|a|>", "<|b|>", "<|c|>", "<|d|>", "ab", "b"]
    ordinary = [s for s in ("hello", "the", "he", "a", "b") if s in vocab]
    entries = []
    for k in range(rng.randint(0, 6)):
        content = rng.choice(ordinary if ordinary and rng.random() < 0.15 else names)
        tid = rng.choice([size + k, size + rng.randint(0, 8), rng.randint(0, size + 3),
                          vocab.get(content, size)])
        entries.append(_entry(content, tid, special=rng.random() < 0.7))
    extra = {}
    if rng.random() < 0.2:  # an added token's string also in model.vocab at some other id
        extra[rng.choice(names)] = rng.choice([size, size + 5, size - 1])
    return entries, extra


def test_added_token_ids_differential_against_hf(tmp_path, base_doc):
    rng = random.Random(39)
    outcomes = {"same": 0, "refused": 0}
    for case in range(120):
        entries, extra = _random_added(rng, base_doc["model"]["vocab"])
        doc = json.loads(json.dumps(base_doc))
        doc["added_tokens"] = entries
        doc["model"]["vocab"].update(extra)
        path = _write(tmp_path, doc, f"t{case}.json")
        try:
            hf_tokenizers.Tokenizer.from_file(str(path))
        except Exception:  # noqa: BLE001 - HF refuses it too: nothing to compare
            continue
        outcomes[_agree_or_refuse(path)] += 1
    assert outcomes["same"] >= 40, outcomes  # most files load, and agree


@pytest.mark.slow
def test_llama3_added_token_ids_against_hf(tmp_path):
    shared = shared_path()
    if shared is None:
        pytest.skip(SKIP_REASON)
    doc = json.loads((shared / "vocab" / "llama3" / "tokenizer.json").read_text(encoding="utf-8"))
    doc["added_tokens"].append(_entry("<|late|>", 130000))
    path = _write(tmp_path, doc)
    ours = cybpe.Tokenizer.from_hf(path)
    theirs = hf_tokenizers.Tokenizer.from_file(str(path))
    assert ours.special_tokens["<|late|>"] == theirs.token_to_id("<|late|>") == 128256
    doc["added_tokens"][-1] = _entry("hello", 128256)
    path = _write(tmp_path, doc)
    with pytest.raises(FormatError, match="hello"):
        cybpe.Tokenizer.from_hf(path)


# -------------------------------------------------------------------------- 6: normalized


def test_normalized_tokens_without_normalizer_agree_or_refuse(tmp_path, base_doc):
    size = len(base_doc["model"]["vocab"])
    cases = {
        "separate": [_entry("<|a|>", size, normalized=True), _entry("<|b|>", size + 1)],
        "all normalized": [_entry("<|a|>", size, normalized=True), _entry("<|b|>", size + 1, normalized=True)],
        "overlap": [_entry("xab", size, normalized=True), _entry("b ", size + 1)],
        "contains": [_entry("<|a|>x", size, normalized=True), _entry("<|a|>", size + 1)],
    }
    seen = {}
    for name, entries in cases.items():
        path = _write(tmp_path, dict(base_doc, added_tokens=entries), f"{name}.json")
        seen[name] = _agree_or_refuse(path, TEXTS + ["xab <|a|>x b c", "<|a|>x<|a|>xab b "])
    assert seen["separate"] == seen["all normalized"] == "same", seen
    assert seen["overlap"] == seen["contains"] == "refused", seen


def test_normalized_token_with_nfc_normalizer_is_refused(tmp_path, base_doc):
    size = len(base_doc["model"]["vocab"])
    doc = dict(base_doc, normalizer={"type": "NFC"}, added_tokens=[_entry("été", size, normalized=True)])
    path = _write(tmp_path, doc)
    theirs = hf_tokenizers.Tokenizer.from_file(str(path))
    assert theirs.encode("e\u0301te\u0301").ids == [size]  # HF matches it after NFC
    with pytest.raises(FormatError, match="normalized"):
        cybpe.Tokenizer.from_hf(path)
    doc["added_tokens"] = [_entry("été", size, normalized=False)]  # as written: fine, and equal
    assert _agree_or_refuse(_write(tmp_path, doc)) == "same"


def test_normalized_flags_differential_against_hf(tmp_path, base_doc):
    rng = random.Random(6)
    size = len(base_doc["model"]["vocab"])
    pieces = ["ab", "b", "x", "<|a|>", "é", "e\u0301", " "]
    outcomes = {"same": 0, "refused": 0}
    for case in range(80):
        names: list[str] = []
        while len(names) < rng.randint(1, 4):
            name = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 3)))
            if name not in names and name.strip():
                names.append(name)
        entries = [_entry(n, size + k, normalized=rng.random() < 0.5) for k, n in enumerate(names)]
        doc = dict(base_doc, added_tokens=entries)
        if rng.random() < 0.3:
            doc["normalizer"] = {"type": "NFC"}
        texts = ["".join(rng.choice(pieces + names) for _ in range(12)) for _ in range(6)]
        outcomes[_agree_or_refuse(_write(tmp_path, doc, f"n{case}.json"), texts)] += 1
    assert outcomes["same"] >= 20 and outcomes["refused"] >= 5, outcomes


@pytest.mark.slow
def test_qwen3_normalized_added_token_against_hf(tmp_path):
    shared = shared_path()
    if shared is None:
        pytest.skip(SKIP_REASON)
    doc = json.loads((shared / "vocab" / "qwen3" / "tokenizer.json").read_text(encoding="utf-8"))
    doc["added_tokens"].append(_entry("été", 151669, normalized=True, special=False))
    path = _write(tmp_path, doc)
    assert hf_tokenizers.Tokenizer.from_file(str(path)).encode("e\u0301te\u0301").ids == [151669]
    with pytest.raises(FormatError, match="normalized"):
        cybpe.Tokenizer.from_hf(path)


# -------------------------------------------------------------------------- 7: roles


def _roles_folder(tmp_path: Path, base_doc: dict, config: dict, special_map: dict | None) -> Path:
    folder = tmp_path / f"folder{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    size = len(base_doc["model"]["vocab"])
    doc = dict(base_doc, added_tokens=[_entry(n, size + k) for k, n in enumerate(("<|a|>", "<|b|>", "<|c|>"))])
    _write(folder, doc)
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    if special_map is not None:
        (folder / "special_tokens_map.json").write_text(json.dumps(special_map), encoding="utf-8")
    return folder


def test_roles_follow_transformers_5(tmp_path, base_doc):
    transformers = pytest.importorskip("transformers")
    size = len(base_doc["model"]["vocab"])
    decoder = {str(size + k): {"content": n, "special": True, "normalized": False, "lstrip": False,
                               "rstrip": False, "single_word": False}
               for k, n in enumerate(("<|a|>", "<|b|>", "<|c|>"))}
    base = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|a|>", "pad_token": "<|b|>"}
    cases = [
        ({**base, "added_tokens_decoder": decoder}, {"eos_token": "<|c|>"}),             # config wins
        (dict(base), {"eos_token": "<|c|>"}),                                              # map wins (legacy)
        ({**base, "added_tokens_decoder": decoder}, {"eos_token": "<|c|>", "bos_token": "<|b|>"}),
        (dict(base), {"bos_token": {"content": "<|c|>"}}),
        ({**base, "added_tokens_decoder": decoder}, None),
    ]
    for config, special_map in cases:
        folder = _roles_folder(tmp_path, base_doc, config, special_map)
        ours = cybpe.Tokenizer.from_pretrained(folder)
        theirs = transformers.AutoTokenizer.from_pretrained(str(folder))
        for role in ("bos_token", "eos_token", "pad_token", "unk_token"):
            assert getattr(ours, role + "_id") == getattr(theirs, role + "_id"), (role, config, special_map)


@pytest.mark.slow
def test_qwen3_roles_against_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    shared = shared_path()
    if shared is None:
        pytest.skip(SKIP_REASON)
    folder = tmp_path / "qwen3"
    shutil.copytree(shared / "vocab" / "qwen3", folder)
    (folder / "special_tokens_map.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}), encoding="utf-8")
    ours = cybpe.Tokenizer.from_pretrained(folder)
    theirs = transformers.AutoTokenizer.from_pretrained(str(folder))
    assert ours.eos_token_id == theirs.eos_token_id == 151645
    assert ours.pad_token_id == theirs.pad_token_id
