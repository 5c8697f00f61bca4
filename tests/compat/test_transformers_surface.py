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
    loader = (transformers.PreTrainedTokenizerFast if request.param == "gpt4o-hf"
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
        for batch in batches[:2] if tensors else batches:
            for one in (batch, batch[0]):
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
    if name == "qwen3":  # its config names every special added token as an extra
        assert ours.all_special_tokens == theirs.all_special_tokens
        assert ours.all_special_ids == theirs.all_special_ids
    else:  # transformers lists the roles and its config's extras; cybpe every special token
        assert set(theirs.all_special_tokens) <= set(ours.all_special_tokens)


def test_decode(pair, texts):
    name, ours, theirs = pair
    rows = [theirs(t)["input_ids"] for t in texts]
    specials = sorted(ours.special_tokens.values())
    rows.append(specials[:40] + rows[0] + specials[-5:])
    for skip in (False, True):
        for row in rows:
            assert ours.decode(row, skip_special_tokens=skip) == theirs.decode(row, skip_special_tokens=skip)
        assert ours.batch_decode(rows, skip_special_tokens=skip) == theirs.batch_decode(rows, skip_special_tokens=skip)
    assert ours.batch_decode(np.array([rows[0][:3], rows[0][:3]])) == theirs.batch_decode(np.array([rows[0][:3]] * 2))
