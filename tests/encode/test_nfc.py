"""``cybpe._c.nfc.nfc`` (the normalizer of tokenizers with NFC, as Qwen's) against
``unicodedata.normalize("NFC", ...)``: its table against the running Python's Unicode data,
then the result on real text of every script, on each character that the quick check cannot
pass, and on random mixtures of marks, starters, Hangul jamo and lone surrogates."""

from __future__ import annotations

import random
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

import cybpe
from cybpe._c import gen_nfc_tables
from cybpe._c.nfc import LONG_RUN, nfc, table_byte, table_serves, table_unicode_version
from support import UDHR_DIR, shared_path

ASK = gen_nfc_tables.ASK


def runtime_byte(cp: int) -> int:
    """What the running Python's unicodedata says the table's byte should be (the generator's
    own rule, applied to this Python)."""
    c = chr(cp)
    return unicodedata.combining(c) if gen_nfc_tables.quick_check_yes(c) else ASK


@pytest.fixture(scope="module")
def asked() -> list[str]:
    """Every character whose table byte is not 0."""
    return [chr(cp) for cp in range(0x110000) if table_byte(cp)]


def test_the_table_serves_this_python():
    """A 0 in the table is a starter here too, a combining class is the same class (or a
    starter: a mark assigned after this Python's Unicode), so the quick check never passes a
    run that this Python's NFC would change."""
    assert table_serves(unicodedata.unidata_version)
    wrong = []
    for cp in range(0x110000):
        ours, here = table_byte(cp), runtime_byte(cp)
        if ours == 0 and here != 0 or 0 < ours < ASK and here not in (0, ours):
            wrong.append(f"U+{cp:04X}: table {ours}, this Python {here}")
    assert not wrong, wrong[:20]


@pytest.mark.skipif(unicodedata.unidata_version != table_unicode_version,
                    reason=f"the header is generated under Unicode {table_unicode_version} (Python 3.13); "
                           f"this Python has {unicodedata.unidata_version}")
def test_the_committed_header_is_current():
    script = Path(gen_nfc_tables.__file__)
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_newer_unicode_is_left_to_unicodedata():
    assert table_serves("13.0.0") and table_serves(table_unicode_version)
    assert not table_serves("99.0.0")


def samples() -> list[tuple[str, str]]:
    found = [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(UDHR_DIR.glob("*.txt"))]
    shared = shared_path()
    if shared is not None:
        docs = shared / "corpora" / "eval" / "docs"
        found += [(p.stem, p.read_text(encoding="utf-8")[:200_000]) for p in sorted(docs.glob("*.txt"))]
    return found


def test_real_text_of_every_script():
    changed = 0
    for name, text in samples():
        expected = unicodedata.normalize("NFC", text)
        got = nfc(text)
        assert got == expected, name
        changed += got != text
        decomposed = unicodedata.normalize("NFD", text)  # every precomposed letter taken apart
        assert nfc(decomposed) == unicodedata.normalize("NFC", decomposed), name
    assert changed  # some texts of the shared or sample corpora are not in NFC


def test_unchanged_text_comes_back_as_itself():
    for text in ["", "ascii", "caf\u00e9", "\u0915\u094d\u0937", "\uac00\ud7a3", "\U0001f600 x", "\u00e9\u0301"]:
        if unicodedata.normalize("NFC", text) == text:
            assert nfc(text) is text


def test_each_character_the_quick_check_cannot_pass(asked):
    """Each such character alone, after starters that do and do not compose with it, before
    and after other marks, at the text's start and end, and in a long text."""
    for c in asked:
        for text in (c, "a" + c, c + "a", "\u0100" + c + "\u0301", "\u1100" + c, "\uac00" + c,
                     "e\u0301\u0323" + c + "\u0300x", "x" * 40 + c * 3 + "\u4e00" + c):
            assert nfc(text) == unicodedata.normalize("NFC", text), (hex(ord(c)), text)


@pytest.mark.parametrize("seed", range(4))
def test_random_mixtures(asked, seed):
    rng = random.Random(seed)
    starters = list("aeouAEIOUknsz \u00e9\u0100\u0915\u0b95\u0e01\u3042\u4e00") + \
        ["\u1100", "\u1161", "\u11a8", "\uac00", "\uac01", "\ud800", "\udfff", "\U0001d15e", "\U00011099"]
    marks = [c for c in asked if unicodedata.combining(c)]
    for _ in range(3000):
        pools = (asked, starters, marks)
        text = "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 30)))
        assert nfc(text) == unicodedata.normalize("NFC", text), [hex(ord(c)) for c in text]


def test_long_runs_and_big_texts():
    marks = "\u0301\u0316\u0300\u0323" * 500  # one 2,000-mark run, out of order
    for text in ("e" + marks, marks, "a\u0308\u0301" + marks + "\u0345", "x" * 1_000_000 + "e\u0301",
                 "e\u0301" * 200_000, ("\u1100\u1161\u11a8" * 50_000), "\U0001d15e" * 10_000 + "a\u0301"):
        assert nfc(text) == unicodedata.normalize("NFC", text)


@pytest.mark.parametrize("seed", range(4))
def test_long_runs_in_our_canonical_order(asked, seed):
    """Runs past ``LONG_RUN`` characters are ordered here (unicodedata's ordering is quadratic):
    random long runs of marks and composing characters, against unicodedata."""
    rng = random.Random(seed)
    for _ in range(40):
        size = rng.randint(LONG_RUN - 2, 600)
        text = rng.choice("aeAE\u1100\uac00\u0915") + "".join(rng.choice(asked) for _ in range(size))
        assert nfc(text) == unicodedata.normalize("NFC", text), [hex(ord(c)) for c in text]


def test_a_megabyte_of_marks_out_of_order_stays_linear():
    """unicodedata alone takes minutes here (its mark ordering is quadratic); nfc finishes in
    well under a second with the answer worked out by hand: the e and the first acute compose
    (the lower-class marks between them do not block it), the marks sort by class."""
    text = "e" + "\u0316\u0301" * 500_000
    got = nfc(text)
    assert got == "\u00e9" + "\u0316" * 500_000 + "\u0301" * 499_999


def test_what_is_not_a_str_is_refused():
    for bad in (None, b"caf\xc3\xa9", 5):
        with pytest.raises(TypeError):
            nfc(bad)  # type: ignore[arg-type]


def test_a_tokenizer_with_nfc_uses_it():
    tok = cybpe.train([(UDHR_DIR / "en.txt").read_text(encoding="utf-8")], vocab_size=300, progress=False)
    normalizing = cybpe.Tokenizer(tok.vocab, tok.pretokenizer, normalizer="NFC")
    text = "cafe\u0301 \u0915\u093c " * 50 + "\u212b"
    assert normalizing.encode_ordinary(text) == tok.encode_ordinary(unicodedata.normalize("NFC", text))
