"""The compiled scanners split exactly like the regex patterns they replace.

The oracle is the pre-tokenizer's own regex path (``with_regex_only()``, which for
``gpt4-digits-rtl`` and ``superbpe`` include their right-to-left refine). Inputs: the shared evaluation corpora
and a slice of the training corpus, hypothesis text, a hostile-alphabet fuzzer (every ``\\s``
kind, CR/LF mixtures, contractions in every case and ``'ſ``, every letter case class, marks on
many scripts, emoji sequences, digits of other scripts, lone surrogates) and long runs.

Speed (reported, not asserted): ``python tests/pretokenize/test_scanner.py`` prints MB/s per pattern and text.
"""

from __future__ import annotations

import lzma
import pickle
import random
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import cybpe
from cybpe._c import gen_unicode_tables as tables_generator
from cybpe.pretokenize.scanner import SCANNER_NAMES, Scanner
from cybpe.errors import UnknownPreTokenizerError
from support import HANG_GUARD_SECONDS, examples


def pretokenizer(name: str) -> cybpe.PreTokenizer:
    """The registered pre-tokenizer a scanner name stands for."""
    if name.startswith("gpt4-digits") and name[-1].isdigit():
        return cybpe.get_pretokenizer("gpt4-digits", digits=int(name[-1]))
    return cybpe.get_pretokenizer(name)


_ORACLES: dict[str, cybpe.PreTokenizer] = {}
_SCANNERS: dict[str, Scanner] = {}


def oracle_spans(name: str, text: str) -> list[tuple[int, int]]:
    if name not in _ORACLES:
        _ORACLES[name] = pretokenizer(name).with_regex_only()
    return _ORACLES[name].split_spans(text)


def scanner(name: str) -> Scanner:
    if name not in _SCANNERS:
        _SCANNERS[name] = Scanner(name)
    return _SCANNERS[name]


def byte_ends_as_code_points(text: str, ends: np.ndarray) -> list[int]:
    data = text.encode("utf-8", "surrogatepass")
    starts = np.frombuffer(data, dtype=np.uint8) & 0xC0 != 0x80  # bytes that start a code point
    cumulative = np.concatenate([[0], np.cumsum(starts)])
    return cumulative[ends].tolist()


def assert_same_split(name: str, text: str, label: str = "") -> None:
    want = oracle_spans(name, text)
    got = scanner(name).split_spans(text)
    if got != want:
        k = next(i for i, (a, b) in enumerate(zip(got + [None], want + [None])) if a != b)
        lo = (want[k] if k < len(want) else got[k])[0]
        raise AssertionError(
            f"{name} {label}: piece {k} differs near {text[max(0, lo - 20):lo + 30]!r}\n"
            f"  scanner: {[text[s:e] for s, e in got[k:k + 4]]}\n"
            f"  regex:   {[text[s:e] for s, e in want[k:k + 4]]}"
        )
    # The byte-level API agrees with the code-point one.
    ends = scanner(name).split_utf8(text.encode("utf-8", "surrogatepass"))
    assert ends.dtype == np.int64
    assert byte_ends_as_code_points(text, ends) == [e for _, e in want], f"{name} {label}: split_utf8"


kinds = pytest.mark.parametrize("name", SCANNER_NAMES)


# -- API --------------------------------------------------------------------------------------

def test_names_and_kinds():
    assert len(set(SCANNER_NAMES)) == len(SCANNER_NAMES) == 11
    assert [Scanner(n).kind for n in SCANNER_NAMES] == list(range(len(SCANNER_NAMES)))
    assert Scanner("o200k").name == "o200k"


def test_unknown_name_lists_the_names():
    with pytest.raises(UnknownPreTokenizerError) as info:
        Scanner("cl100kk")
    assert "cl100k" in str(info.value) and "gpt4-digits-rtl" in str(info.value)


@kinds
def test_pickle_round_trip(name):
    again = pickle.loads(pickle.dumps(Scanner(name)))
    assert again == Scanner(name) and again.name == name
    assert again.split("Hello, world 12345!") == Scanner(name).split("Hello, world 12345!")


def test_empty_and_buffer_types():
    sc = Scanner("cl100k")
    assert sc.split_spans("") == [] and sc.split("") == []
    assert sc.split_utf8(b"").tolist() == []
    data = "héllo wörld\n".encode()
    want = sc.split_utf8(data).tolist()
    assert want[-1] == len(data)
    for same in (bytearray(data), memoryview(data), np.frombuffer(data, dtype=np.uint8)):
        assert sc.split_utf8(same).tolist() == want
    assert "".join(sc.split("héllo wörld\n")) == "héllo wörld\n"


@kinds
def test_invalid_utf8_never_faults(name):
    rng = random.Random(5)
    sc = Scanner(name)
    pool = [b"\xff", b"\x80", b"\xc3", b"\xe0\x80", b"\xed\xa0", b"\xf4\x90\x80\x80", b"\xf0\x9f",
            b"a", b" ", b"1", b"'", b"\n", "é".encode(), "\u0301".encode(), "ſ".encode()]
    for _ in range(300):
        data = b"".join(rng.choice(pool) for _ in range(rng.randrange(1, 20)))
        ends = sc.split_utf8(data).tolist()
        assert ends and ends[-1] == len(data)
        assert all(a < b for a, b in zip([0] + ends, ends))


# -- the Unicode tables -----------------------------------------------------------------------

def test_tables_match_regex_for_every_code_point():
    """Each class bit of the compiled lookup equals the regex property, U+0000..U+10FFFF."""
    from cybpe.pretokenize.scanner import _code_point_classes

    compiled = np.frombuffer(_code_point_classes(), dtype=np.uint8)
    every = "".join(map(chr, range(0x110000)))
    for bit, (_, prop) in enumerate(tables_generator.CLASS_BITS):
        expected = np.zeros(0x110000, dtype=bool)
        for m in regex.finditer(prop + "+", every):
            expected[m.start():m.end()] = True
        got = (compiled >> bit) & 1 == 1
        diff = np.flatnonzero(got != expected)
        assert diff.size == 0, f"{prop}: first difference at U+{diff[0]:04X}"


def test_committed_header_is_current():
    """The committed tables are what the installed regex gives (the release named in the
    header's comment may be an earlier one that gives the same tables)."""
    header = Path(tables_generator.OUTPUT).read_text()
    generated = tables_generator.render(tables_generator.class_bytes(), tables_generator.contraction_folds())
    assert tables_generator.same_tables(header, generated), "rerun python cybpe/_c/gen_unicode_tables.py"


def test_same_tables_ignores_only_the_release():
    header = Path(tables_generator.OUTPUT).read_text()
    other_release = regex.sub(r"the `regex` module [^,\n]+,", "the `regex` module 1999.1.1,", header, count=1)
    assert other_release != header
    assert tables_generator.same_tables(header, other_release)
    # one class byte changed is a stale header, whatever the release
    at = header.index("{", header.index("cybpe_uni_stage2[")) + 1
    at += len(header[at:]) - len(header[at:].lstrip())  # the first class byte
    changed = header[:at] + ("1" if header[at] != "1" else "2") + header[at + 1:]
    assert not tables_generator.same_tables(header, changed)


# -- corpora ----------------------------------------------------------------------------------

def _eval_files(shared_dir: Path) -> list[Path]:
    files = sorted((shared_dir / "corpora" / "eval").glob("**/*.txt"))
    assert files, f"no evaluation texts under {shared_dir}"
    return files


@kinds
def test_corpus_heads(name, shared_dir):
    """The first 16 KB of every evaluation file (every script), and the UDHR files whole."""
    for path in _eval_files(shared_dir):
        text = path.read_text(encoding="utf-8")
        if "parallel-udhr" not in path.parts:
            text = text[:16_000]
        assert_same_split(name, text, str(path))


@pytest.mark.slow
@kinds
def test_corpus_files_whole(name, shared_dir):
    for path in _eval_files(shared_dir):
        assert_same_split(name, path.read_text(encoding="utf-8"), str(path))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cl100k", "o200k", "superbpe"])
def test_training_corpus_slice(name, shared_dir):
    with lzma.open(shared_dir / "corpora" / "train" / "mixed-train.txt.xz", "rt", encoding="utf-8") as f:
        text = f.read(6_000_000)  # characters: about 7 MB of UTF-8
    for start in range(0, len(text), 500_000):  # document-sized chunks keep messages short
        assert_same_split(name, text[start:start + 500_000], f"train[{start}:]")


# -- hypothesis -------------------------------------------------------------------------------

@kinds
@settings(max_examples=examples(300), deadline=None)
@given(text=st.text())
def test_hypothesis_text(name, text):
    assert_same_split(name, text)


@kinds
@settings(max_examples=examples(200), deadline=None)
@given(text=st.text(st.characters(codec=None, exclude_categories=()), max_size=40))
def test_hypothesis_text_with_surrogates(name, text):
    assert_same_split(name, text)


# -- hostile alphabet -------------------------------------------------------------------------

WHITESPACE = (
    ["\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f", " ", "\x85", "\xa0",
     "\u1680", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\r\n", "\r\n\r\n", "\n\n", " \n"]
    + [chr(c) for c in range(0x2000, 0x200B)]
)
CONTRACTIONS = ["'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'rE", "'ve", "'VE", "'m", "'M",
                "'ll", "'LL", "'Ll", "'lL", "'d", "'D", "'ſ", "'\u212a", "'", "''", "'x", "'l", "'r"]
LETTERS = ["a", "z", "A", "Z", "s", "S", "l", "L", "e", "E", "ſ", "\u212a", "é", "É", "ß", "ǅ",
           "ǈ", "ʰ", "ˆ", "ー", "々", "中", "文", "あ", "한", "א", "ب", "Ж", "ж", "Ω", "ω", "ﬁ",
           "XMLHttp", "Request", "camelCase", "ABC", "hello", "HELLO"]
MARKS = ["\u0301", "\u0308", "\u093f", "\u094d", "\u0902", "\u0e31", "\u0e48", "\u1031", "\u103a",
         "\u0bcd", "\u0bbf", "\u064e", "\u0651", "\u20dd", "\ufe0f",
         "हिन्दी", "विकिपीडिया", "ภาษาไทย", "မြန်မာ", "தமிழ்", "عَرَبِيّ", "e\u0301", "E\u0301"]
EMOJI = ["😀", "👍🏽", "👨\u200d👩\u200d👧", "🏳️\u200d🌈", "\u200d", "\u200c", "🇫🇷"]
NUMBERS = ["0", "1", "12", "123", "1234", "9999999", "١٢٣", "१२३", "૧", "½", "²", "Ⅻ", "ⅻ", "〇",
           "a1", "1a", "x²", "٣ب"]
PUNCTUATION = ["!", ".", ",", "?", "/", "//", "-", "_", "(", ")", "\"", "«", "»", "…", "—", "§",
               "$", "€", "+", "=", "<", ">", "#", "@", "\\", "`", "~", "^", "\x00", "\x7f", "\u00ad",
               "\ufeff", "\U0010ffff", "\U000e0001"]
SURROGATES = ["\ud800", "\udfff", "\udc00", "\ud83d", "\ude00"]
ALL_ATOMS = WHITESPACE + CONTRACTIONS + LETTERS + MARKS + EMOJI + NUMBERS + PUNCTUATION + SURROGATES


def hostile_strings(seed: int, count: int, max_atoms: int = 24) -> list[str]:
    rng = random.Random(seed)
    groups = [WHITESPACE, CONTRACTIONS, LETTERS, MARKS, EMOJI, NUMBERS, PUNCTUATION, SURROGATES]
    out = []
    for _ in range(count):
        # Bias each string towards a few groups so that runs of one class form.
        chosen = rng.sample(groups, rng.randrange(1, 4))
        atoms = [a for g in chosen for a in g]
        if rng.random() < 0.3:
            atoms = ALL_ATOMS
        out.append("".join(rng.choice(atoms) for _ in range(rng.randrange(1, max_atoms))))
    return out


@kinds
def test_hostile_alphabet(name):
    for k, text in enumerate(hostile_strings(seed=1234 + SCANNER_NAMES.index(name), count=3000)):
        assert_same_split(name, text, f"hostile #{k}")


@kinds
def test_every_atom_pair(name):
    """Every ordered pair of atoms, alone and between letters, spaces and newlines."""
    text_parts = []
    for a in ALL_ATOMS:
        for b in ALL_ATOMS:
            text_parts.append(a + b)
    for sep in ("", " ", "x", "\n"):
        assert_same_split(name, sep.join(text_parts), f"pairs joined by {sep!r}")
    for pair in text_parts[::7]:  # at the very start and end of the text as well
        assert_same_split(name, pair, "pair alone")


LONG_RUN_ATOMS = [" ", "\t", "\n", "\r\n", " \n", "\x0b", "\xa0", "\u3000", "\u2028", "'s", "'LL", "'",
                  "'ſ", "a", "A", "Aa", "aA", "ǅ", "ʰ", "中", "\u0301", "e\u0301", "\u093f", "क\u093f",
                  "1", "١", "½", "1a", "!", "/", "!\n", "😀", "\u200d", "\ud800", "\x00"]


@kinds
def test_long_runs(name):
    """Runs of 12k of each class, bare and framed, stay exact (and linear: the test is quick)."""
    for atom in LONG_RUN_ATOMS:
        run = atom * (12_000 // len(atom))
        for text in (run, "a" + run + "a", " " + run + "\n", "1" + run + "x"):
            assert_same_split(name, text, f"run of {atom!r}")


@kinds
def test_scanners_stay_linear(name):
    """1M-character runs of each class finish: a quadratic rule would take hours (the scanners
    take milliseconds; bench/test_bench_scanner.py measures them)."""
    import time

    for atom in LONG_RUN_ATOMS:
        data = ("\u0301" + atom * (1_000_000 // len(atom)) + "\u0301").encode("utf-8", "surrogatepass")
        t0 = time.perf_counter()
        ends = scanner(name).split_utf8(data)
        elapsed = time.perf_counter() - t0
        assert ends[-1] == len(data)
        assert elapsed < HANG_GUARD_SECONDS, f"{atom!r}: {elapsed:.2f} s"  # a hang guard, not a speed check


# -- superbpe: also equal to its one-regex export pattern -------------------------------------

SUPERBPE_EDGES = ["", "1", "12", "123", "1234", "123456", "1" * 100, "x" + "9" * 31 + "y", "½" * 7,
                  "١٢٣٤٥", "Ⅻⅻ½²", "12½3", "a\ud800" + "1234" + "\udfff", "\ud800\udfff",
                  "By the way, I am 1234567 km: ok\n\tno", "000 0000", "१२३४ ૧૨ 〇〇〇〇", "\U0001d7ce" * 5]


def digit_heavy_strings(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = list("0123456789") + ["١", "٢", "१", "½", "²", "Ⅻ", "〇", "\U0001d7ce", "a", " ", ".",
                                     "\n", "é", "中", "\u0301", "\ud800"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 80))) for _ in range(count)]


def test_superbpe_equals_its_export_pattern(shared_dir):
    """The lookahead export pattern (quadratic on long runs, so short texts only) gives the same
    spans as the scanner: what tiktoken and HF read is what cybpe counts and encodes."""
    export = regex.compile(cybpe.get_pretokenizer("superbpe").export_pattern)
    texts = (SUPERBPE_EDGES + digit_heavy_strings(seed=17, count=3000) + hostile_strings(seed=18, count=2000)
             + [path.read_text(encoding="utf-8")[:16_000] for path in _eval_files(shared_dir)])
    for text in texts:
        assert scanner("superbpe").split_spans(text) == [m.span() for m in export.finditer(text)], text[:80]
        assert_same_split("superbpe", text, "edges and digit-heavy text")


def test_superbpe_long_number_runs():
    """A million digits (of several scripts) and document-long pieces without a number."""
    for run in ("7" * 1_000_001, "١٢" * 500_000, "½" * 999_999):
        for text in (run, "a " + run + " b", run + "x" + run[:4]):
            assert_same_split("superbpe", text, f"run of {run[0]!r}")
    assert scanner("superbpe").split("word " * 200_000) == ["word " * 200_000]


# -- the registry wires the scanners in -------------------------------------------------------

@kinds
def test_registered_pretokenizer_uses_scanner(name, force_regex):
    pt = pretokenizer(name)
    assert pt.uses_scanner
    assert isinstance(pt.scanner, Scanner) and pt.scanner.name == name
    text = "Hello, WORLD's 1234567 numbers\n\n  हिन्दी 'll\u00a0end  "
    fast = pt.split_spans(text)
    force_regex(True)
    assert not pt.uses_scanner
    assert pt.split_spans(text) == fast
    assert pt.split(text) == [text[s:e] for s, e in fast]


# -- a peer: HF tokenizers' Split on the portable (non-possessive) patterns --------------------

@pytest.mark.parametrize("name", ["gpt2", "llama3", "qwen2"])
def test_against_hf_split_on_english_and_code(name, shared_dir):
    tokenizers = pytest.importorskip("tokenizers")
    files = [p for p in _eval_files(shared_dir) if p.name in ("en.txt", "python.txt", "c.txt")]
    split = tokenizers.pre_tokenizers.Split(
        tokenizers.Regex(pretokenizer(name).pattern), behavior="isolated"
    )
    for path in files:
        text = path.read_text(encoding="utf-8")[:100_000]
        hf = [span for _, span in split.pre_tokenize_str(text)]
        assert scanner(name).split_spans(text) == hf, str(path)


# -- the per-piece C API and threads ------------------------------------------------------------

@kinds
def test_scan_next_loop_agrees_with_scan_all(name):
    """scan_next (the per-piece C API the encoder uses) gives the same ends as scan_all."""
    from cybpe.pretokenize.scanner import _ends_by_scan_next

    for text in hostile_strings(seed=99, count=300) + ["12345678 x 1234", "a\n  ", "\u0301"]:
        data = text.encode("utf-8", "surrogatepass")
        assert _ends_by_scan_next(scanner(name).kind, data) == scanner(name).split_utf8(data).tolist()


# The cl100k-like kinds take text of three-byte letters and marks a run of pieces at a time
# (scanner.pyx, three_byte_pieces), o200k words of caseless letters and marks
# (o200k_caseless_pieces); scan_next takes every piece through the per-piece scanner.
THREE_BYTE_KINDS = ["cl100k", "llama3", "qwen2", "gpt4-digits1", "gpt4-digits2", "o200k"]
ABUGIDA_ATOMS = (["क", "ष", "ि", "्", "ं", "ः", "।", "॥", "१", "२", "ஸ", "ி", "்", "ក", "ា", "្", "់", "។",
                  "ཀ", "ྱ", "ོ", "་", "།", "༣", "ー", "中", "、", "😀", "\u200d", "\u200c", "\u3000", "\xa0",
                  " ", "  ", "\n", "\r\n", " \n", "\t", "a", "Z", "'s", "'", "1", "12", ",", "-", "é", "ж",
                  "한", "국", "어", "か", "ナ", "ب", "ع", "\u064e", "\u0651", "ـ", "א", "\u05b8", "ʰ", "ǅ", "Ж", "/"]
                 + MARKS[:15])


def abugida_strings(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ABUGIDA_ATOMS) for _ in range(rng.randrange(1, 40))) for _ in range(count)]


@pytest.mark.parametrize("name", THREE_BYTE_KINDS)
def test_three_byte_runs_split_like_regex(name):
    for k, text in enumerate(abugida_strings(seed=31 + THREE_BYTE_KINDS.index(name), count=3000)):
        assert_same_split(name, text, f"abugida #{k}")


def assert_same_as_piece_by_piece(name: str, data: bytes) -> None:
    from cybpe.pretokenize.scanner import _ends_by_scan_next

    assert _ends_by_scan_next(scanner(name).kind, data) == scanner(name).split_utf8(data).tolist(), data[:80]


@pytest.mark.parametrize("name", THREE_BYTE_KINDS)
def test_three_byte_runs_agree_with_the_piece_scanner(name):
    """On broken UTF-8 (overlong E0 forms, cut and stray bytes among three-byte characters),
    where the regex cannot say, and on valid text: the same ends as piece by piece."""
    rng = random.Random(77)
    pool = [b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xe0\xa4", b"\xe0", b"\xed\xa0\x80", b"\xef\xbf\xbf",
            b"\xf0\x9f\x98\x80", b"\xf0\x9f", b"\x80", b"\xff", b" ", b"\n", b"a", b"1", b"'"]
    pool += [atom.encode("utf-8", "surrogatepass") for atom in ABUGIDA_ATOMS]
    for _ in range(3000):
        assert_same_as_piece_by_piece(name, b"".join(rng.choice(pool) for _ in range(rng.randrange(1, 30))))


@pytest.mark.parametrize("name", THREE_BYTE_KINDS)
def test_three_byte_runs_on_corpora(name, shared_dir):
    for lang in ("hi", "ta", "km", "dz", "ko", "ja", "zh-Hant", "ar"):
        text = (shared_dir / "corpora" / "eval" / "docs" / f"{lang}.txt").read_text(encoding="utf-8")[:60_000]
        assert_same_split(name, text, lang)
        assert_same_as_piece_by_piece(name, text.encode())


def test_threads_share_a_scanner():
    from concurrent.futures import ThreadPoolExecutor

    sc = Scanner("o200k")
    texts = [t.encode("utf-8", "surrogatepass") for t in hostile_strings(seed=7, count=64, max_atoms=400)]
    want = [sc.split_utf8(t).tolist() for t in texts]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda t: sc.split_utf8(t).tolist(), texts))
    assert got == want
