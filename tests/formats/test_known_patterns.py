"""Which registered pre-tokenizer a vocabulary's pattern names (``pretokenizer_for_pattern``):
patterns are compared without building every candidate (``pattern_of``), so both must agree
with what building gives."""

from __future__ import annotations

import pytest

import cybpe
from cybpe.errors import InvalidParameterError, UnknownPreTokenizerError
from cybpe.formats.hf import hf_safe_pattern
from cybpe.formats.known import pretokenizer_for_pattern
from cybpe.pretokenize.registry import pattern_of

BUILT_WITH_DEFAULTS = [i["name"] for i in cybpe.list_pretokenizers()
                       if all(v["default"] is not None for v in i["params"].values())]


@pytest.mark.parametrize("name", BUILT_WITH_DEFAULTS)
def test_pattern_of_is_the_built_pattern(name):
    assert pattern_of(name) == cybpe.get_pretokenizer(name).pattern


@pytest.mark.parametrize("digits", [1, 2, 3])
def test_pattern_of_takes_params(digits):
    assert pattern_of("gpt4-digits", digits=digits) == cybpe.get_pretokenizer("gpt4-digits", digits=digits).pattern
    assert pattern_of("regex", pattern=r"\S+|\s+") == r"\S+|\s+"


def test_pattern_of_refuses_what_build_refuses():
    with pytest.raises(InvalidParameterError):
        pattern_of("gpt4-digits", digits=7)
    with pytest.raises(UnknownPreTokenizerError):
        pattern_of("no-such-pretokenizer")


@pytest.mark.parametrize("name", [n for n in BUILT_WITH_DEFAULTS if n != "regex"])
def test_a_registered_pattern_finds_a_pre_tokenizer_with_that_pattern(name):
    pattern = cybpe.get_pretokenizer(name).pattern
    found = pretokenizer_for_pattern(pattern)
    assert found.name != "regex" and found.pattern == pattern
    by_hf = pretokenizer_for_pattern("not the pattern", hf_pattern=hf_safe_pattern(pattern))
    assert by_hf.name != "regex" and hf_safe_pattern(by_hf.pattern) == hf_safe_pattern(pattern)


def test_an_unknown_pattern_gets_a_regex_pre_tokenizer():
    found = pretokenizer_for_pattern(r"[a-z]+|\s+|.")
    assert found.name == "regex" and found.pattern == r"[a-z]+|\s+|."
