"""The transformers-shaped surface of ``cybpe.Tokenizer`` (``tok(...)``, ``len``, ``get_vocab``,
``tokenize``, conversions, ``decode(skip_special_tokens=)``, ``batch_decode``, special tokens)
differentially against ``transformers.AutoTokenizer`` on the shared Llama 3, Qwen 3 and GPT-4o
folders, for each argument combination."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import cybpe
from cybpe.errors import InvalidParameterError

transformers = pytest.importorskip("transformers")
MAJOR = int(transformers.__version__.split(".")[0])

FOLDERS = ("llama3", "qwen3", "gpt4o-hf")
HOSTILE = ["Hello world . ,", "", " ", "  leading and trailing  ", "don't STOP 12345 6", "中文 🙂 ça\n\n\tx",
           "<|endoftext|> and <|im_start|>user<|im_end|> <think>x</think>", "<|begin_of_text|>hi<|eot_id|>",
           "a" * 300, "\r\n\r\n  \u00a0 \u3000 !!!"]


@pytest.fixture(scope="module", params=FOLDERS)
def pair(request, shared_dir):
    folder = shared_dir / "vocab" / request.param
    # transformers 5 replaces the split pattern of a folder whose config names GPT2Tokenizer
    # (GPT-4o's) with GPT-2's ("don't" -> "don" + "'t"), so it does not split as that folder's
    # tokenizer.json says; cybpe follows the file, as the tokenizers library and transformers'
    # generic fast tokenizer do: that is the reference for this folder.
    # (transformers 4.x's GPT2TokenizerFast reads the file as it is.)
    loader = (transformers.PreTrainedTokenizerFast if request.param == "gpt4o-hf" and MAJOR >= 5
              else transformers.AutoTokenizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = loader.from_pretrained(str(folder))
    ours = cybpe.Tokenizer.from_pretrained(folder)
    if theirs.pad_token is None:  # both get the same pad token, as a user would set it
        pad = theirs.eos_token
        theirs.pad_token = pad
        ours.set_roles(pad_token=pad)
    return request.param, ours, theirs


@pytest.fixture(scope="module")
def texts(shared_dir):
    docs = []
    for path in sorted((shared_dir / "corpora" / "eval").rglob("*.txt"))[:4]:
        body = path.read_text(encoding="utf-8")
        docs += [body[i:i + 700] for i in range(0, min(len(body), 7000), 700)]
    return HOSTILE + docs


def _plain(value):
    if isinstance(value, np.ndarray) and value.dtype == object:
        return ("rows", value.shape, [_plain(row) for row in value])
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.kind, value.shape, value.tolist())
    return value


def test_call_for_each_argument_combination(pair, texts):
    name, ours, theirs = pair
    batches = [texts[:1], texts[:8], texts[8:20], texts]
    combos = itertools.product((True, False), (False, True, "longest", "max_length"), (False, True),
                               (None, 7, 64), (None, "np"), (None, False), ("right", "left"), (None, 8))
    for add, padding, truncation, max_length, tensors, mask, side, multiple in combos:
        if (padding == "max_length" or truncation) and max_length is None:
            continue  # transformers falls back on model_max_length (Llama 3's is 1e30)
        kwargs = dict(add_special_tokens=add, padding=padding, truncation=truncation, max_length=max_length,
                      return_tensors=tensors, return_attention_mask=mask, padding_side=side,
                      pad_to_multiple_of=multiple)
        chosen = batches[:2] if tensors else batches
        # each batch, and each distinct first text alone (most batches start with texts[0])
        singles = list(dict.fromkeys(batch[0] for batch in chosen))
        for batch in chosen:
            for one in (batch, *(singles if batch is chosen[0] else ())):
                try:
                    expected = theirs(one, **kwargs)
                except ValueError:  # ragged rows as tensors
                    with pytest.raises(InvalidParameterError):
                        ours(one, **kwargs)
                    continue
                got = ours(one, **kwargs)
                assert set(got) == set(expected), (name, kwargs)
                for key in expected:
                    assert _plain(got[key]) == _plain(expected[key]), (name, key, kwargs)
    assert ours("x").input_ids == theirs("x").input_ids


def test_vocabulary_and_conversions(pair, texts):
    name, ours, theirs = pair
    assert len(ours) == len(theirs)
    assert ours.get_vocab() == theirs.get_vocab()
    if name != "gpt4o-hf":  # its model vocabulary holds the two added tokens too
        assert ours.vocab_size == theirs.vocab_size
    ids = list(range(0, len(theirs), 997)) + sorted(ours.special_tokens.values())
    assert ours.convert_ids_to_tokens(ids) == theirs.convert_ids_to_tokens(ids)
    assert ours.convert_ids_to_tokens(ids[3]) == theirs.convert_ids_to_tokens(ids[3])
    strings = theirs.convert_ids_to_tokens(ids)
    assert ours.convert_tokens_to_ids(strings) == theirs.convert_tokens_to_ids(strings)
    assert ours.convert_tokens_to_ids("not-a-token-string") == theirs.convert_tokens_to_ids("not-a-token-string")
    for text in texts:
        assert ours.tokenize(text) == theirs.tokenize(text), text[:40]
    assert ours.all_special_ids == [ours.special_tokens[t] for t in ours.all_special_tokens]
    # the roles, then the config's additional_special_tokens, as transformers lists them
    assert ours.all_special_tokens == theirs.all_special_tokens
    assert ours.all_special_ids == theirs.all_special_ids


def test_decode(pair, texts):
    name, ours, theirs = pair
    rows = [theirs(t)["input_ids"] for t in texts]
    specials = sorted(ours.special_tokens.values())
    rows.append(specials[:40] + rows[0] + specials[-5:])
    # transformers 4.x applies the config's clean_up_tokenization_spaces (Llama 3's is true) to
    # BPE too; 5.x does not, and cybpe follows 5.x: on 4.x the comparison turns it off
    clean = {} if MAJOR >= 5 else {"clean_up_tokenization_spaces": False}
    for skip in (False, True):
        for row in rows:
            assert ours.decode(row, skip_special_tokens=skip) == theirs.decode(row, skip_special_tokens=skip, **clean)
        assert ours.batch_decode(rows, skip_special_tokens=skip) == theirs.batch_decode(rows, skip_special_tokens=skip, **clean)
    assert ours.batch_decode(np.array([rows[0][:3], rows[0][:3]])) == theirs.batch_decode(np.array([rows[0][:3]] * 2), **clean)


def test_pairs_offsets_and_masks(pair, texts):
    """Pairs, each truncation strategy on both sides, offsets, token type ids, the special
    tokens mask and lengths: the keyword arguments the combination test above leaves out."""
    name, ours, theirs = pair
    firsts, seconds = texts[:6], texts[6:12]
    for strategy in (True, "only_first", "only_second", "longest_first"):
        for side in ("right", "left"):
            for max_length in (3, 40, 400):
                kwargs = dict(truncation=strategy, max_length=max_length, return_offsets_mapping=True,
                              return_token_type_ids=True, return_special_tokens_mask=True, return_length=True)
                theirs.truncation_side = side
                ours.truncation_side = side
                for one in ((firsts, seconds), (firsts[0], seconds[0]), (firsts,)):
                    if strategy == "only_second" and len(one) == 1:
                        continue
                    try:
                        expected = theirs(*one, **kwargs)
                    except Exception:  # a text too short for only_first / only_second
                        with pytest.raises(InvalidParameterError):
                            ours(*one, **kwargs)
                        continue
                    got = ours(*one, **kwargs)
                    assert set(got) == set(expected), (name, kwargs)
                    for key in expected:
                        assert _plain(got[key]) == _plain(expected[key]), (name, key, strategy, side, max_length)
    theirs.truncation_side = ours.truncation_side = "right"
    for text, other in zip(firsts, seconds):
        assert ours.tokenize(text, other) == theirs.tokenize(text, other)
        assert ours.tokenize(text, other, add_special_tokens=True) == theirs.tokenize(text, other, add_special_tokens=True)


def test_settings_as_attributes(pair, texts):
    """padding_side / truncation_side / split_special_tokens set on the tokenizer, and the
    role setters, as a transformers user sets them."""
    name, ours, theirs = pair
    batch = texts[:6]
    saved = (theirs.padding_side, theirs.truncation_side, theirs.pad_token)
    try:
        for side in ("left", "right"):
            ours.padding_side = theirs.padding_side = side
            ours.truncation_side = theirs.truncation_side = side
            for kwargs in ({"padding": True}, {"padding": "max_length", "truncation": True, "max_length": 9}):
                got, expected = ours(batch, **kwargs), theirs(batch, **kwargs)
                assert {k: _plain(v) for k, v in got.items()} == {k: _plain(v) for k, v in expected.items()}
        specials = [t for t in ours.all_special_tokens][:3]
        text = "a " + " b ".join(specials) + " c"
        for split in (True, False):
            got = ours(text, split_special_tokens=split)["input_ids"]
            assert got == theirs(text, split_special_tokens=split)["input_ids"], (name, split)
        ours.pad_token = theirs.pad_token = specials[-1]
        assert (ours.pad_token, ours.pad_token_id) == (theirs.pad_token, theirs.pad_token_id)
        assert ours(batch, padding=True)["input_ids"] == theirs(batch, padding=True)["input_ids"]
        with pytest.raises(InvalidParameterError):
            ours.pad_token = "not an added token"
        with pytest.raises(InvalidParameterError):
            ours.padding_side = "middle"
    finally:
        theirs.padding_side, theirs.truncation_side, theirs.pad_token = saved
        ours.padding_side = ours.truncation_side = "right"
        ours.pad_token = saved[2]


def test_trimmed_offsets_of_added_tokens(shared_dir, tmp_path):
    """A trimming ByteLevel post-processor moves an added token's offsets past its leading and
    trailing whitespace, as HF does (the byte-level tokens' spaces are trimmed too)."""
    import json
    import shutil

    doc = json.loads((shared_dir / "vocab" / "llama3" / "tokenizer.json").read_text(encoding="utf-8"))
    doc["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    next_id = max(e["id"] for e in doc["added_tokens"]) + 1
    for k, content in enumerate((" spaced ", "\u3000wide", "tail\t")):
        doc["added_tokens"].append({"id": next_id + k, "content": content, "single_word": False, "lstrip": False,
                                    "rstrip": False, "normalized": False, "special": False})
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    shutil.copy(shared_dir / "vocab" / "llama3" / "tokenizer_config.json", tmp_path / "tokenizer_config.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    ours = cybpe.Tokenizer.from_pretrained(tmp_path)
    for text in ("x spaced y  z", " spaced \u3000wide tail\ttail\t", "  a  spaced  b"):
        expected = theirs(text, return_offsets_mapping=True)
        got = ours(text, return_offsets_mapping=True)
        assert got["input_ids"] == expected["input_ids"]
        assert [tuple(o) for o in got["offset_mapping"]] == [tuple(o) for o in expected["offset_mapping"]]
