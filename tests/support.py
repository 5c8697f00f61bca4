"""Where test material lives. Material outside the repo is found through one setting, ``CYBPE_SHARED``."""

from __future__ import annotations

import contextlib
import signal

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

import cybpe
from cybpe.errors import CybpeError

#: tests/ (the test files sit in one folder per package stage below it) and the checkout or
#: unpacked sdist that holds it (README.md, bench/).
TESTS_DIR = Path(__file__).resolve().parent
REPO_DIR = TESTS_DIR.parent
DATA_DIR = TESTS_DIR / "data"
#: The UDHR sample ships inside the package (``cybpe bench`` and the README use it), so tests read
#: it from the cybpe they test: the source tree in a checkout, site-packages for an installed wheel.
UDHR_DIR = Path(cybpe.__file__).parent / "data" / "udhr"
PLUGIN_EXAMPLE_DIR = TESTS_DIR / "plugin_example"
COMPILED_PLUGIN_EXAMPLE_DIR = TESTS_DIR / "compiled_plugin_example"

#: Whether this run includes the tests marked slow (``pytest --full`` or CYBPE_FULL_TESTS=1); set
#: by conftest.py's pytest_configure, before any test module is imported.
FULL_RUN = os.environ.get("CYBPE_FULL_TESTS", "") not in ("", "0")


def examples(full: int) -> int:
    """A property test's hypothesis examples: ``full`` in the full run, a fifth of it (at least
    20) in the default run, so the default run keeps every property test at a fraction of the
    time and the full run (CI's wheel stage) keeps their depth."""
    return full if FULL_RUN else min(full, max(20, full // 5))


SKIP_REASON = (
    "the shared corpora/vocabularies are absent (set CYBPE_SHARED to the folder that holds "
    "corpora/ and vocab/; a plain clone has only tests/data)"
)


def shared_path() -> Path | None:
    """``$CYBPE_SHARED``, else ``../shared`` next to the repository; None when absent."""
    configured = os.environ.get("CYBPE_SHARED")
    path = Path(configured) if configured else Path(__file__).resolve().parents[2] / "shared"
    return path if path.is_dir() else None


def eval_texts(shared: Path, size: int) -> list[tuple[str, str]]:
    """(file name, first ``size`` characters) of every evaluation document and code file."""
    files = sorted((shared / "corpora" / "eval" / "docs").glob("*.txt"))
    files += sorted((shared / "corpora" / "eval" / "code").glob("*.txt"))
    assert files, "no evaluation corpora found"
    return [(f.name, f.read_text(encoding="utf-8")[:size]) for f in files]


def write_every_format(tokenizer, folder, text: str) -> dict[str, str]:
    """Save ``tokenizer`` in every format cybpe reads (and chunk counts of ``text``) into
    ``folder``: the paths by kind (native, tiktoken, hf, gpt2-encoder, gpt2-merges, counts)."""
    import cybpe

    paths = {kind: os.path.join(folder, name) for kind, name in (
        ("native", "tok.json"), ("tiktoken", "tok.tiktoken"), ("hf", "tokenizer.json"),
        ("gpt2-encoder", "encoder.json"), ("gpt2-merges", "vocab.bpe"), ("counts", "counts.json"))}
    tokenizer.save(paths["native"])
    tokenizer.to_tiktoken(paths["tiktoken"])
    tokenizer.to_hf(paths["hf"])
    # GPT-2 files always mean GPT-2's pre-tokenizer (to_gpt2 refuses any other): write the same
    # vocabulary under it.
    as_gpt2 = tokenizer if tokenizer.pretokenizer.name == "gpt2" else cybpe.Tokenizer(tokenizer.vocab, "gpt2")
    as_gpt2.to_gpt2(paths["gpt2-encoder"], paths["gpt2-merges"])
    cybpe.ChunkCounts("cl100k", sorted(tokenizer.special_tokens)).update([text]).save(paths["counts"])
    return paths


def run_cli(*args, input: bytes | None = None, env: dict | None = None, check: bool = True,
            stdout=None, timeout: float = 180) -> subprocess.CompletedProcess:
    """``python -m cybpe ARGS`` in a subprocess (stdout and stderr captured unless ``stdout`` is
    given); with ``check``, it must exit 0 without a traceback."""
    out = subprocess.run([sys.executable, "-m", "cybpe", *map(str, args)], input=input,
                         capture_output=stdout is None, stdout=stdout,
                         stderr=subprocess.PIPE if stdout is not None else None,
                         env=dict(os.environ, **(env or {})), timeout=timeout)
    if check:
        assert out.returncode == 0, out.stderr.decode(errors="replace")
        assert b"Traceback" not in out.stderr
    return out


def random_vocabulary(seed: int, alphabet: bytes, words: int, lengths: tuple[int, int],
                      shuffle_bytes: bool = False) -> list[bytes]:
    """The 256 single bytes (in a shuffled id order when ``shuffle_bytes``), then ``words``
    distinct random strings over ``alphabet`` whose lengths lie in ``lengths`` (inclusive)."""
    import random

    rng = random.Random(seed)
    tokens = [bytes([b]) for b in range(256)]
    if shuffle_bytes:
        rng.shuffle(tokens)
    seen = set(tokens)
    while len(tokens) < 256 + words:
        word = bytes(rng.choice(alphabet) for _ in range(rng.randint(*lengths)))
        if word not in seen:
            seen.add(word)
            tokens.append(word)
    return tokens


def textbook_bpe(tokens: list[bytes], words: list[list[int]], n_merges: int) -> list[tuple[int, int]]:
    """Textbook BPE training, in place: ``n_merges`` times (fewer when no pair is left) the most
    frequent adjacent id pair of ``words`` (ties: the smallest ids) becomes a new token appended
    to ``tokens`` and is merged in every word. Returns the merges in the order made."""
    from collections import Counter

    merges: list[tuple[int, int]] = []
    for _ in range(n_merges):
        pairs = Counter(p for w in words for p in zip(w, w[1:]))
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], -p[0], -p[1]))
        new = len(tokens)
        tokens.append(tokens[best[0]] + tokens[best[1]])
        merges.append(best)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if (w[i], w[i + 1]) == best:
                    w[i : i + 2] = [new]
                i += 1
    return merges


def all_split_merges(tokens: list[bytes]) -> list[tuple[int, int]]:
    """Every split of every token into two tokens, as a merges list (ranks in id order)."""
    ids = {token: i for i, token in enumerate(tokens)}
    return [(ids[t[:k]], ids[t[k:]]) for t in tokens for k in range(1, len(t))
            if t[:k] in ids and t[k:] in ids]


def udhr_texts() -> dict[str, str]:
    """The bundled UDHR sample: text by language tag, in file-name order."""
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))}


# -- training: the merge trainer against its reference -------------------------------------------

#: GPT-4's (cl100k) split in possessive form (as rustbpe's default), and the plain form of
#: Llama 3's that HF's ``Split`` takes.
GPT4_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}"""
                r"""| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""")
LLAMA3_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
                  r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
#: The fields of a merge result that the fast trainer and the reference must agree on.
TRAIN_FIELDS = ("merges", "new_ids", "counts", "token_bytes", "stop_reason")


def count_chunks(texts, pattern=GPT4_PATTERN):
    """Unique pre-tokenized chunks (bytes) and their counts, in first-seen order."""
    from collections import Counter

    import regex

    counts = Counter()
    for text in texts:
        counts.update(regex.findall(pattern, text))
    return [chunk.encode("utf-8") for chunk in counts], list(counts.values())


def merged_bytes(result):
    """The bytes each merge produced, in merge order."""
    return [result.token_bytes[i] for i in result.new_ids]


def read_training_prefix(shared_dir, n_chars):
    """The first ``n_chars`` characters of the shared training corpus (skips when absent)."""
    import lzma

    import pytest

    path = shared_dir / "corpora" / "train" / "mixed-train.txt.xz"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return f.read(n_chars)


def byte_level_decoder():
    """ByteLevel character -> byte (GPT-2's printable mapping)."""
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    others = [b for b in range(256) if b not in set(printable)]
    table = {chr(b): b for b in printable}
    table.update({chr(256 + n): b for n, b in enumerate(others)})
    return table


def _corpora_strategy():
    from hypothesis import strategies as st

    alphabets = [b"a", b"ab", b"abc", b"ab \x00\xff", bytes(range(250, 256)) + b"!"]

    @st.composite
    def corpora(draw):
        alphabet = draw(st.sampled_from(alphabets))
        piece = st.one_of(
            st.lists(st.sampled_from(alphabet), max_size=14).map(bytes),
            st.tuples(st.sampled_from(alphabet), st.integers(1, 40))
            .map(lambda run: bytes([run[0]]) * run[1]),
        )
        chunks = draw(st.lists(piece, max_size=12, unique=True))
        weight = st.one_of(st.integers(1, 5), st.integers(1, 10**6), st.just(2**40))
        weights = draw(st.lists(weight, min_size=len(chunks), max_size=len(chunks)))
        return chunks, weights

    return corpora


#: A hypothesis strategy: ``corpora()`` draws (chunks, weights) over a small alphabet, with runs
#: and weights up to 2**40.
corpora = _corpora_strategy()


def assert_exports_agree(tok, texts, tmp_path):
    """Native save/load, tiktoken and HF exports all give ``tok``'s ids."""
    import pytest

    tiktoken = pytest.importorskip("tiktoken")
    tokenizers = pytest.importorskip("tokenizers")
    from tiktoken.load import load_tiktoken_bpe

    tok.save(tmp_path / "tok.json")
    again = cybpe.Tokenizer.load(tmp_path / "tok.json")
    assert again.vocab == tok.vocab and again.metadata == tok.metadata
    tok.to_tiktoken(tmp_path / "tok.tiktoken")
    enc = tiktoken.Encoding("t", pat_str=tok.pretokenizer.export_pattern,
                            mergeable_ranks=load_tiktoken_bpe(str(tmp_path / "tok.tiktoken")),
                            special_tokens=tok.special_tokens)
    tok.to_hf(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in texts:
        ids = tok.encode_ordinary(text)
        assert again.encode_ordinary(text) == ids
        assert enc.encode_ordinary(text) == ids
        assert hf.encode(text, add_special_tokens=False).ids == ids
        assert tok.decode(ids) == text


# -- parity training: the compiled loop against its reference ------------------------------------

PARITY_FIELDS = ("merges", "new_ids", "counts", "token_bytes", "chosen", "dev_lengths_start",
                 "dev_lengths", "stop_reason")


def counted(text: str, pretokenizer: str = "cl100k"):
    """The sorted (chunks, weights) arrays of one text's chunk counts."""
    return cybpe.ChunkCounts(pretokenizer).update([text]).sorted_arrays()


def assert_same_parity(train, dev, n_new, **options):
    """Run the compiled parity trainer and the reference, require identical results, return the
    compiled one."""
    from cybpe.reference.parity import reference_parity_merges
    from cybpe.reference.trainer import _tie_key
    from cybpe.training.parity import train_parity_merges

    tie_break = options.pop("tie_break", "ids")
    fast = train_parity_merges(train, dev, n_new, tie_break=tie_break, **options)
    slow = reference_parity_merges(train, dev, n_new, tie_key=_tie_key(tie_break), **options)
    for name in PARITY_FIELDS:
        assert getattr(fast, name) == getattr(slow, name), name
    return fast


# -- strict base64 cases (formats) ------------------------------------------------------------------

B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
B64_REFUSED = ["QQ", "QQ=", "Q===", "=QQ=", "QQ==QQ==", "Q Q==", "QQ==\n", "QUJD\n", "QU=D", "-_==",
               "QUJDRA=", "é", "QQ==ab", "0000=", "0000===", "QR==", "QUJ=", "="]
B64_ACCEPTED = {"": b"", "QQ==": b"A", "QUI=": b"AB", "QUJD": b"ABC", "QUJDRA==": b"ABCD"}


# -- pattern matchers: the compiled matchers and the automaton against the regex module --------------

#: The built-in pre-tokenizers with a pattern the compiled matcher takes.
BUILT_IN_PATTERNS = ["gpt2", "cl100k", "o200k", "llama3", "qwen2", "abugida", "gpt4-digits", "gpt4-digits-rtl"]

#: Patterns users write: variations of the built-ins and every construct the compiler takes.
CUSTOM_PATTERNS = {
    "whitespace-split": r"\S+|\s+",
    "gpt2-no-space-prefix": r"'s|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}+|[^\s\p{L}\p{N}]+|\s+",
    "digits-of-four": r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,4}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "atomic-and-folded": r"(?>\p{L}+|\p{N}+)|(?i:hello|world|straße|ǆ)|.|\n",
    "dotted-names": r"[a-z]+(?:\.[a-z]+)*|\p{N}+(?:[.,]\p{N}+)*|\s+|.",
    "lazy": r"\p{L}{2,}?(?=\p{L}{2}|\P{L}|$)|\p{L}|[^\p{L}]+?(?=\p{L}|$)|[^\p{L}]+",
    "counted-groups": r"(?:ab|cd){2,3}+|(?:\p{Lu}\p{Ll}+){1,2}|(?:\p{N}\p{N}){1,2}?|[\s\S]",
    "anchors": r"^\p{L}+|\p{L}+\Z|\s+$|\p{L}+|[^\p{L}]",
    "classes": r"[A-Za-z\u00c0-\u00ff]+|[\p{Lo}\p{Lm}]+|[\P{L}&]+|[^\p{L}\p{N}\s]|\s|\p{N}",
    "marks": r"[\p{L}\p{M}]+|\p{M}+|[^\p{L}\p{M}]",
    "case-insensitive-global": r"(?i)[a-f]+|k+|s+|[^a-fks]",
}

PATTERN_ATOMS = ["a", "Z", "é", "ß", "ſ", "K", "ǅ", "中", "ि", "्", "٣", "½", "7", "0", " ", "\t", "\n",
                 "\r", "\u00a0", "\u3000", "\u2028", "\x85", "\x0b", "\x1c", "'", "s", "S", "ll", "LL", "!",
                 ".", ",", "\ud800", "🙂", "\u200d", "\x00", "A", "b", "cd", "ab", "\u0301", "ǆ", "straße",
                 "STRASSE", "hello"]


def _hostile_text_strategy():
    from hypothesis import strategies as st

    return st.lists(st.sampled_from(PATTERN_ATOMS), max_size=60).map("".join) | st.text(max_size=80)


#: A hypothesis strategy: text built from PATTERN_ATOMS, or any text.
hostile_text = _hostile_text_strategy()


def all_patterns() -> dict[str, str]:
    """The built-in patterns by pre-tokenizer name, then CUSTOM_PATTERNS."""
    return {name: cybpe.get_pretokenizer(name).pattern for name in BUILT_IN_PATTERNS} | CUSTOM_PATTERNS


def bundled_texts() -> dict[str, str]:
    """The UDHR sample by file name, and tests/data/python_sample.txt as "python_sample"."""
    texts = {p.name: p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))}
    texts["python_sample"] = (DATA_DIR / "python_sample.txt").read_text(encoding="utf-8")
    return texts


@functools.lru_cache(maxsize=None)
def published_patterns() -> dict[str, str]:
    """The pre-tokenizer strings the shared vocabularies ship with (empty when absent)."""
    import json

    shared = shared_path()
    found: dict[str, str] = {}
    if shared is None:
        return found
    encodings = shared / "vocab" / "tiktoken_encodings.json"
    if encodings.is_file():
        for name, spec in json.loads(encodings.read_text()).items():
            found[f"tiktoken-{name}"] = spec["pat_str"]
    for path in sorted((shared / "vocab").glob("*/tokenizer.json")):
        pre = json.loads(path.read_text(encoding="utf-8")).get("pre_tokenizer") or {}
        for step in pre.get("pretokenizers", [pre]):
            if step.get("type") == "Split" and "Regex" in step.get("pattern", {}):
                found[f"{path.parent.name}-split"] = step["pattern"]["Regex"]
    return found


def greedy(pattern: str) -> str:
    """The pattern with its possessive repeats made greedy ("\\p{L}++" -> "\\p{L}+")."""
    import re

    return re.sub(r"(?<!\\)([+*?]|\{\d+(?:,\d*)?\})\+", r"\1", pattern)


def dfa_patterns() -> dict[str, str]:
    """all_patterns(), and the greedy form of each possessive one (named "NAME (greedy)")."""
    patterns = all_patterns()
    return patterns | {f"{name} (greedy)": greedy(p) for name, p in patterns.items() if greedy(p) != p}


@functools.lru_cache(maxsize=None)
def in_subset_patterns() -> list[str]:
    """The patterns of dfa_patterns() and published_patterns() that the automaton takes."""
    from cybpe.pretokenize.pattern_compiler import UnsupportedPattern
    from cybpe.pretokenize.pattern_scanner import PatternScanner

    def in_subset(pattern: str) -> bool:
        try:
            PatternScanner(pattern, "dfa")
        except UnsupportedPattern:  # NotDeterministic included
            return False
        return True

    candidates = list(dfa_patterns().values()) + list(published_patterns().values())
    return sorted({p for p in candidates if in_subset(p)})


@functools.lru_cache(maxsize=None)
def both_matchers(pattern: str):
    """The automaton and the backtracking matcher of ``pattern``, built once per pattern
    (scanners are read-only, so the many texts checked against one pattern can share them)."""
    from cybpe.pretokenize.pattern_scanner import PatternScanner

    return PatternScanner(pattern, "dfa"), PatternScanner(pattern, "backtrack")


def assert_matchers_agree(pattern: str, text: str) -> None:
    """Both matchers of ``pattern`` give the regex module's spans of ``text``, and the same ends
    on its UTF-8."""
    automaton, backtracking = both_matchers(pattern)
    expected = automaton._regex_spans(text)
    assert automaton.split_spans(text) == expected, (pattern, text)
    assert backtracking.split_spans(text) == expected, (pattern, text)
    ends = automaton._compiled_ends(text.encode("utf-8", "surrogatepass"))
    assert ends is not None
    assert ends.tolist() == backtracking._compiled_ends(text.encode("utf-8", "surrogatepass")).tolist()


def dfa_eval_texts() -> list[str]:
    """The first 60,000 characters of each shared eval text; skips the calling test when the
    shared material (or its published patterns) is absent."""
    import pytest

    shared = shared_path()
    if shared is None or not published_patterns():
        pytest.skip("needs $CYBPE_SHARED/corpora/eval and $CYBPE_SHARED/vocab")
    paths = sorted((shared / "corpora" / "eval").glob("*/*.txt"))
    assert paths
    return [p.read_text(encoding="utf-8")[:60_000] for p in paths]


_PATTERN_CLASSES = ["a", "b", "'", " ", r"\n", r"\r", r"\s", r"\S", r"\p{L}", r"\p{N}", r"\p{Lu}",
                    r"\p{Ll}", r"\p{M}", r"[^\s\p{L}\p{N}]", r"[^\r\n\p{L}\p{N}]", r"[a-c]",
                    r"[\u00e0-\u00ff]", "é", ".", r"(?i:s)", r"(?i:k)", r"\P{L}", "[ab']"]


def random_patterns():
    """A hypothesis strategy of patterns in the automaton's subset: alternations of sequences
    that each start with something that reads a character (so the pattern cannot match the
    empty string), then any repeats, groups and a lookahead."""
    from hypothesis import strategies as st

    cls = st.sampled_from(_PATTERN_CLASSES)
    at_least_one = st.sampled_from(["", "+", "{1,3}", "{2}", "+?", "++", "{1,3}+", "{1,3}?"])
    any_count = st.sampled_from(["", "+", "*", "?", "+?", "*?", "??", "{0,2}", "{1,3}?", "*+", "?+"])
    look = st.sampled_from(["", "", "", r"(?!\S)", r"(?=\s)", r"(?!\p{L})", r"(?=a)", "$", r"\Z"])

    def sequence(inner):
        group = st.builds(lambda alts, r: "(?:" + "|".join(alts) + ")" + r,
                          st.lists(inner, min_size=1, max_size=3), st.sampled_from(["", "+", "{1,2}"]))
        optional_group = st.builds(lambda g, r: g + r, group, st.sampled_from(["?", "*", "*?"]))
        head = st.builds(lambda c, r: c + r, cls, at_least_one) | group
        tail = st.lists(st.builds(lambda c, r: c + r, cls, any_count) | group | optional_group, max_size=2)
        return st.builds(lambda h, t, la: h + "".join(t) + la, head, tail, look)

    leaf = st.builds(lambda c, r: c + r, cls, at_least_one)
    alternative = st.recursive(leaf, sequence, max_leaves=5)
    return st.builds(lambda alts, last: "|".join(alts + ([last] if last else [])),
                     st.lists(alternative, min_size=1, max_size=4), st.sampled_from(["", r"\s", "."]))


def regex_spans(pattern: str, text: str) -> list[tuple[int, int]]:
    """The regex module's spans of ``pattern`` in ``text`` (the oracle's reading)."""
    import regex

    from cybpe.pretokenize.regex_spans import regex_spans as oracle_spans

    return oracle_spans(regex.compile(pattern), text)


# -- hang guards ----------------------------------------------------------------------------------

#: The wall-clock ceiling of the tests that guard against a hang or a quadratic blow-up, not a
#: speed check: a linear pass over a 1 M-character input takes well under a second, a quadratic
#: one hours. Generous on purpose, so a busy shared machine cannot fail them; speed is measured
#: in bench/ (pytest-benchmark).
HANG_GUARD_SECONDS = 60


class Hung(Exception):
    """Raised by the alarm of :func:`within`: not an OSError, so that no ``except OSError`` of
    the code under test turns a hang into a typed error."""


@contextlib.contextmanager
def within(seconds: int):
    """Fail (Hung) when the block takes longer: a hang guard for calls that could block (a FIFO
    open, a /dev/zero read, a crafted file), not a speed check."""
    def expired(signum, frame):
        raise Hung(f"still running after {seconds} s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# -- the hostile-file suites (tests/io/test_hostile_round2.py, test_fuzz_round2.py) -------------

HOSTILE_TEXT = "Hello world, the quick brown fox. 12345 jumps! Ünïcödé 中文 🙂\n  done. " * 10
HOSTILE_TIME_BOUND = 20  # seconds for one load of one mutated file
#: The formats the hostile-file suites mutate (keys of :func:`hostile_format_files`).
HOSTILE_KINDS = ["native", "tiktoken", "hf", "gpt2-encoder", "gpt2-merges", "counts", "counts-bin",
         "counts-gzip", "counts-zstd", "config", "special-map"]


def hostile_format_files(folder: Path) -> dict[str, Path]:
    """Every file format cybpe reads, written from one small tokenizer into ``folder`` (the
    hostile-file suites mutate them): name -> path."""
    tok = cybpe.train([HOSTILE_TEXT], 320, special_tokens=["<|eot|>"], progress=False)
    paths = {k: Path(v) for k, v in write_every_format(tok, folder, HOSTILE_TEXT).items()}
    counts = cybpe.ChunkCounts("cl100k", ["<|eot|>"]).update([HOSTILE_TEXT])
    for name, compress in (("counts-bin", None), ("counts-gzip", "gzip"), ("counts-zstd", "zstd")):
        if compress == "zstd":
            pytest.importorskip("zstandard")
        paths[name] = folder / f"{name}.cnt"
        counts.save(paths[name], compress=compress)
    pretrained = folder / "pretrained"
    tok.save_pretrained(pretrained)
    paths["config"] = pretrained / "tokenizer_config.json"
    paths["special-map"] = pretrained / "special_tokens_map.json"
    return paths


def loader_of(kind: str, files: dict[str, Path]) -> Callable[[Path], Any]:
    if kind == "native":
        return cybpe.Tokenizer.load
    if kind == "tiktoken":
        return lambda p: cybpe.Tokenizer.from_tiktoken(p, "cl100k")
    if kind == "hf":
        return cybpe.Tokenizer.from_hf
    if kind == "gpt2-encoder":
        return lambda p: cybpe.Tokenizer.from_gpt2(p, files["gpt2-merges"])
    if kind == "gpt2-merges":
        return lambda p: cybpe.Tokenizer.from_gpt2(files["gpt2-encoder"], p)
    if kind in ("config", "special-map"):
        def load_folder(p: Path) -> Any:
            folder = p.parent / f"folder-{p.name}"
            folder.mkdir(exist_ok=True)
            for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
                source = p if name == files[kind].name else files[kind].parent / name
                (folder / name).write_bytes(source.read_bytes())
            return cybpe.Tokenizer.from_pretrained(folder)
        return load_folder
    return cybpe.ChunkCounts.load


def use_loaded(obj: Any, out: Path) -> None:
    """What a caller does with a loaded object; it must work or raise a cybpe error."""
    if isinstance(obj, cybpe.Tokenizer):
        ids = obj.encode("hello world <|eot|> é", allowed_special="all")
        obj.decode(ids)
        obj.save(out)
        cybpe.Tokenizer.load(out)
    else:
        list(obj.items())
        obj.save(out)
        cybpe.ChunkCounts.load(out)


def check_loads(load: Callable[[Path], Any], mutations: dict[str, bytes], tmp_path: Path) -> list[str]:
    failures = []
    for name, data in mutations.items():
        path = tmp_path / "mutated"
        path.write_bytes(data)
        try:
            with within(HOSTILE_TIME_BOUND):
                obj = load(path)
                use_loaded(obj, tmp_path / ("out.json" if isinstance(obj, cybpe.Tokenizer) else "out.cnt"))
        except CybpeError:
            continue
        except Exception as exc:  # noqa: BLE001 - the point of the test
            failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:160]}")
    return failures
