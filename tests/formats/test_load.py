"""cybpe.load / cybpe.save: one table of formats (cybpe/api/load.py), each row round-tripped."""

from __future__ import annotations

import pytest

import cybpe
from cybpe.api.load import FORMAT_NAMES, FORMATS, format_of, output_format
from cybpe.errors import ExportError, FormatError, InvalidParameterError, ParameterTypeError
from support import UDHR_DIR

TEXTS = [p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))[:6]]


@pytest.fixture(scope="module")
def gpt2_tok() -> cybpe.Tokenizer:
    """Trained with GPT-2's pre-tokenizer and one special token: every format can carry it."""
    tok = cybpe.train(TEXTS, 600, pretokenizer="gpt2", special_tokens=["<|endoftext|>"])
    tok.set_roles(eos_token="<|endoftext|>")
    return tok


# The output path each format is written to, and whether the format is told by name.
TARGETS = {
    "native": ("tok.json", None),
    "tiktoken": ("tok.tiktoken", None),
    "gpt2": ("gpt2-folder", None),
    "hf": ("tokenizer.json", None),
    "transformers": ("hf-folder", "transformers"),
}


def test_every_format_has_a_target_here():
    assert set(TARGETS) == set(FORMAT_NAMES) and len(FORMATS) == len(FORMAT_NAMES)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_save_then_load_gives_the_same_ids(name, gpt2_tok, tmp_path):
    target, given = TARGETS[name]
    out = tmp_path / target
    written = cybpe.save(gpt2_tok, out, format=given)
    assert written.name == name
    assert format_of(out).name == name
    # a .tiktoken file of an unregistered encoding needs its pre-tokenizer named
    again = cybpe.load(out, pretokenizer="gpt2" if name == "tiktoken" else None)
    text = TEXTS[0] + " 12345 <|endoftext|>"
    assert again.encode_ordinary(text) == gpt2_tok.encode_ordinary(text)
    if name in ("native", "transformers"):
        assert again.eos_token == "<|endoftext|>"


def test_the_pretokenizer_can_be_replaced_on_load(gpt2_tok, tmp_path):
    gpt2_tok.save(tmp_path / "tok.json")
    again = cybpe.load(tmp_path / "tok.json", pretokenizer="cl100k")
    assert again.pretokenizer.name == "cl100k" and again.eos_token == "<|endoftext|>"


def test_output_format_from_the_path(tmp_path):
    assert output_format(tmp_path / "x.tiktoken").name == "tiktoken"
    assert output_format(tmp_path / "a" / "tokenizer.json").name == "hf"
    assert output_format(tmp_path / "x.json").name == "native"
    assert output_format(tmp_path / "folder").name == "gpt2"
    with pytest.raises(InvalidParameterError, match="cannot tell the format"):
        output_format(tmp_path / "x.txt")
    with pytest.raises(InvalidParameterError, match="unknown format"):
        output_format(tmp_path / "x.json", "yaml")


def test_bad_inputs_are_typed(gpt2_tok, tmp_path):
    with pytest.raises(FormatError, match="no such file"):
        cybpe.load(tmp_path / "missing.json")
    with pytest.raises(FormatError, match="(?i)no such file"):
        cybpe.Tokenizer.from_tiktoken(tmp_path / "missing.tiktoken")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FormatError, match="folder without"):
        cybpe.load(tmp_path / "empty")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(FormatError, match="not a tokenizer file"):
        cybpe.load(tmp_path / "notes.txt")
    with pytest.raises(ParameterTypeError):
        cybpe.load(b"tok.json")
    with pytest.raises(ParameterTypeError):
        cybpe.save("not a tokenizer", tmp_path / "x.json")


def test_an_export_the_target_cannot_reproduce_is_refused_and_writes_nothing(tmp_path):
    tok = cybpe.train(TEXTS, 400, pretokenizer="cl100k")
    with pytest.raises(ExportError):
        cybpe.save(tok, tmp_path / "gpt2-out", format="gpt2")  # GPT-2 files always split as GPT-2
    assert not (tmp_path / "gpt2-out").exists()
