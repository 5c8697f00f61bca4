"""SpecialTokenSplitter: leftmost, longest-first cuts, against a plain reference scan; its
pattern is compiled on first use, so a fresh splitter shared by several threads is checked."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from cybpe.pretokenize.specials import SpecialTokenSplitter
from support import examples

SPECIALS = ["<|endoftext|>", "<|end|>", "<|e", "<|fim_prefix|>", "[INST]", "[/INST]", "<s>", "</s>"]


def reference_parts(specials: list[str], text: str) -> list[tuple[str, bool]]:
    """At each position the longest special starting there; ordinary text in between."""
    out: list[tuple[str, bool]] = []
    pos = ordinary = 0
    while pos < len(text):
        found = max((s for s in specials if text.startswith(s, pos)), key=len, default=None)
        if found is None:
            pos += 1
            continue
        if pos > ordinary:
            out.append((text[ordinary:pos], False))
        out.append((found, True))
        pos = ordinary = pos + len(found)
    if ordinary < len(text):
        out.append((text[ordinary:], False))
    return out


_TEXT = st.lists(st.sampled_from(SPECIALS + ["<", "|", ">", "e", "nd", "[", "]", "INST", "/", " ", "中",
                                             "\ud800", "s"]), max_size=25).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(text=_TEXT)
def test_parts_and_first_agree_with_the_reference_scan(text):
    splitter = SpecialTokenSplitter(SPECIALS)
    expected = reference_parts(SPECIALS, text)
    assert list(splitter.parts(text)) == expected
    assert list(splitter.ordinary_parts(text)) == [p for p, special in expected if not special]
    assert splitter.first(text) == next((p for p, special in expected if special), None)


PREFIXED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # one common prefix, "<|"
_PREFIXED_TEXT = st.lists(st.sampled_from(PREFIXED + ["<", "<<", "|", "<|", "<|im", "x", " ", "中", "\ud800"]),
                          max_size=40).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(text=_PREFIXED_TEXT, decoys=st.integers(0, 150))
def test_first_with_a_common_prefix_and_many_near_misses(text, decoys):
    """With a common prefix, first() looks for the prefix's first character before any search:
    up to 64 near misses one by one, then a plain search. Texts with up to 150 lone '<' before
    them, in three scripts' widths (ASCII, CJK, a surrogate), against the reference scan."""
    splitter = SpecialTokenSplitter(PREFIXED)
    for body in ("<" * decoys + text, "<a " * decoys + text, text + "<" * decoys):
        assert splitter.first(body) == next((p for p, special in reference_parts(PREFIXED, body) if special), None)


def test_no_specials_and_empty_text():
    assert list(SpecialTokenSplitter([]).parts("a<|endoftext|>")) == [("a<|endoftext|>", False)]
    assert SpecialTokenSplitter([]).first("<|endoftext|>") is None
    assert list(SpecialTokenSplitter(SPECIALS).parts("")) == []


def test_a_fresh_splitter_is_safe_from_several_threads():
    texts = ["x<|endoftext|>y[INST]z</s>" * 50, "no specials here", "<|end|><|e<|endoftext|>"]
    expected = [reference_parts(SPECIALS, t) for t in texts]
    for _ in range(20):
        splitter = SpecialTokenSplitter(SPECIALS)  # its pattern not compiled yet
        barrier = threading.Barrier(4)
        results: list = []

        def work():
            barrier.wait()
            results.append([list(splitter.parts(t)) for t in texts])

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [expected] * 4


def test_none_in_rules_out_a_batch_and_never_misses():
    """``none_in`` is True only when no text holds a special string; a text holding one (first,
    last, alone, or the prefix split by the join) makes it False, as ``first`` would."""
    splitter = SpecialTokenSplitter(["<|endoftext|>", "<|fim|>"])
    clean = ["plain text", "a < b | c", "", "ascii and ünïcode 日本"]
    assert splitter.none_in(clean)
    for k in range(len(clean) + 1):
        marked = clean[:k] + ["x<|fim|>y"] + clean[k:]
        assert not splitter.none_in(marked)
    # Two texts that would make the prefix if joined without a separator: still ruled out.
    assert splitter.none_in(["ends with <", "|starts"])
    assert SpecialTokenSplitter([]).none_in(["<|endoftext|>"])
    assert not SpecialTokenSplitter(["ab", "cd"]).none_in(["no prefix to search for"])
    assert all(splitter.none_in([t]) == (splitter.first(t) is None) for t in clean + ["<|fim|>"])
