"""``cybpe bench`` and the bits-per-byte helper, checked against independent computations."""

from __future__ import annotations

import json
import lzma
import math
import os
import subprocess
import sys

import pytest
import regex

from cybpe.report.variants import gini, read_prefix, word_counts
from cybpe.report.metrics import bits_per_byte
from support import UDHR_DIR as UDHR, REPO_DIR

# The two patterns written out here (not asked from cybpe): tiktoken's cl100k_base, and the
# same with combining marks in the word class and out of the punctuation class.
CL100K = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
          r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
ABUGIDA = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{M}\p{N}]?+[\p{L}\p{M}]++|\p{N}{1,3}+"""
           r"""| ?[^\s\p{L}\p{M}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")


def bench(*args) -> dict:
    out = subprocess.run([sys.executable, "-m", "cybpe", "bench", "--json", "--speed-mb", "0.05", *map(str, args)],
                         capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr.decode()
    return json.loads(out.stdout)


def _naive_gini(xs):
    xs = sorted(xs)
    n = len(xs)
    # the sorted-values form: G = (2 * sum_i i * x_i) / (n * sum x) - (n + 1) / n, i from 1
    return 2 * sum((i + 1) * x for i, x in enumerate(xs)) / (n * sum(xs)) - (n + 1) / n


def test_gini():
    assert gini([2.0, 2.0, 2.0]) == 0.0
    assert gini([0, 0, 0, 1]) == pytest.approx(0.75)
    values = [1.1, 3.7, 2.2, 9.0, 1.0]
    assert gini(values) == pytest.approx(_naive_gini(values))


def test_bits_per_byte_formula():
    assert bits_per_byte(math.log(2), 1.0) == pytest.approx(1.0)
    assert bits_per_byte(2.0, 4.0) == pytest.approx(2.0 / 4.0 / 0.6931471805599453)
    from cybpe.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError):
        bits_per_byte(1.0, 0)


def test_word_bases():
    texts = {"en": "one two  three\nfour", "th": "หนึ่งสองสาม สี่"}
    assert word_counts(texts, "reference", "en") == {"en": 4, "th": 4}
    assert word_counts(texts, "whitespace", "en") == {"en": 4, "th": 2}


def test_read_prefix_of_xz_cuts_after_a_line(tmp_path):
    path = tmp_path / "c.txt.xz"
    with lzma.open(path, "wt", encoding="utf-8") as f:
        f.write("first line\nsecond line\nthird\n" * 10)
    text = read_prefix(path, 0.000015)  # 15 characters
    assert text == "first line\n"


def test_pieces_against_regex_findall_on_hindi_and_english():
    report = bench("--texts", UDHR / "en.txt", UDHR / "hi.txt", "--variants", "cl100k,abugida")
    en, hi = (UDHR / "en.txt").read_text(encoding="utf-8"), (UDHR / "hi.txt").read_text(encoding="utf-8")
    words = len(en.split())  # parallel texts: English words are the denominator for every language
    assert report["word_basis"] == "reference"
    assert report["texts"]["hi"]["words"] == words
    for variant, pattern in (("cl100k", CL100K), ("abugida", ABUGIDA)):
        for lang, text in (("en", en), ("hi", hi)):
            row = report["results"][variant][lang]
            pieces = regex.findall(pattern, text)
            assert row["pieces"] == len(pieces), (variant, lang)
            assert row["pieces_per_word"] == pytest.approx(len(pieces) / words)
            assert row["bytes_per_piece"] == pytest.approx(len(text.encode("utf-8")) / len(pieces))
            assert row["tokens"] is None  # nothing to apply, nothing trained
    results = report["results"]
    assert results["abugida"]["hi"]["pieces_per_word"] < results["cl100k"]["hi"]["pieces_per_word"] / 1.5
    assert results["abugida"]["en"]["pieces"] == results["cl100k"]["en"]["pieces"]
    for variant in ("cl100k", "abugida"):
        summary = report["summary"][variant]
        assert summary["compiled_mb_s"] > summary["regex_mb_s"] > 0
        assert summary["gini_pieces"] == pytest.approx(
            _naive_gini([results[variant][lang]["pieces_per_word"] for lang in ("en", "hi")]))


def test_trained_tokens_premium_and_gini(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join((UDHR / f"{lang}.txt").read_text(encoding="utf-8") for lang in ("en", "hi", "th")),
                      encoding="utf-8")
    report = bench("--texts", *(UDHR / f"{lang}.txt" for lang in ("en", "hi", "th", "zh-Hans")),
                   "--variants", "cl100k,abugida", "--train-corpus", corpus, "--vocab-size", 600)
    assert report["training"]["vocab_size"] == 600
    for variant, rows in report["results"].items():
        for lang, row in rows.items():
            text = (UDHR / f"{lang}.txt").read_bytes()
            assert row["tokens"] >= row["pieces"]  # BPE never merges across pieces
            assert row["tokens"] <= len(text)  # and never does worse than one token per byte
            assert row["bytes_per_token"] == pytest.approx(len(text) / row["tokens"])
            assert row["premium"] == pytest.approx(row["tokens"] / rows["en"]["tokens"])
        assert report["summary"][variant]["gini"] == pytest.approx(
            _naive_gini([row["tokens_per_word"] for row in rows.values()]))
    # the fix matters where pieces were the floor: Hindi costs fewer tokens under abugida
    assert report["results"]["abugida"]["hi"]["tokens"] < report["results"]["cl100k"]["hi"]["tokens"]


def test_applied_cl100k_vocabulary_matches_tiktoken(shared_dir):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    ranks_path = shared_dir / "vocab" / "cl100k_base.tiktoken"
    enc = tiktoken.Encoding("cl100k_test", pat_str=CL100K, mergeable_ranks=load_tiktoken_bpe(str(ranks_path)),
                            special_tokens={})
    langs = ("en", "hi", "ja")
    report = bench("--texts", *(UDHR / f"{lang}.txt" for lang in langs), "--variants", "abugida",
                   "-t", ranks_path)
    assert report["variants"] == ["abugida", "cl100k_base"]  # the vocabulary is a column of its own
    assert report["summary"]["cl100k_base"]["kind"] == "file"  # given with -t: not "published"
    assert report["summary"]["cl100k_base"]["pretokenizer"] == "cl100k"
    assert report["results"]["abugida"]["hi"]["tokens"] is None
    assert any(note.startswith("abugida: pre-tokenization figures only") for note in report["notes"])
    counts = {lang: len(enc.encode_ordinary((UDHR / f"{lang}.txt").read_text(encoding="utf-8"))) for lang in langs}
    rows = report["results"]["cl100k_base"]
    for lang in langs:
        assert rows[lang]["tokens"] == counts[lang]
        assert rows[lang]["premium"] == pytest.approx(counts[lang] / counts["en"])


def test_markdown_and_terminal_tables():
    args = [sys.executable, "-m", "cybpe", "bench", "--speed-mb", "0.02", "--variants", "cl100k,gpt2",
            "--texts", UDHR / "en.txt", UDHR / "ko.txt"]
    md = subprocess.run([*map(str, args), "--markdown"], capture_output=True, text=True, check=True).stdout
    assert "| lang | language (script group) | cl100k | gpt2 |" in md
    assert any(line.startswith("| ko |") for line in md.splitlines())
    assert "| variant | kind | vocab | mean cost |" in md
    plain = subprocess.run(list(map(str, args)), capture_output=True, text=True, check=True).stdout
    assert plain.splitlines()[0].startswith("pieces per English word")
    assert "|" not in plain


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "bars.png"
    subprocess.run([sys.executable, "-m", "cybpe", "bench", "--speed-mb", "0.02", "--variants", "cl100k,abugida",
                    "--texts", str(UDHR / "en.txt"), str(UDHR / "ta.txt"), "--plot", str(out)],
                   capture_output=True, check=True)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_one_clear_line(tmp_path):
    blocker = tmp_path / "site" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('matplotlib is hidden by the test')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(blocker.parent), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-m", "cybpe", "bench", "--texts", str(UDHR / "en.txt"),
                          "--plot", str(tmp_path / "x.png")], capture_output=True, text=True, env=env)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert out.stderr.strip() == "cybpe bench: error: --plot needs matplotlib: pip install 'cybpe[plot]'"


def test_default_texts_come_from_cybpe_shared(tmp_path):
    ntrex = tmp_path / "shared" / "corpora" / "eval" / "parallel-ntrex"
    ntrex.mkdir(parents=True)
    for lang in ("en", "th"):
        (ntrex / f"{lang}.txt").write_bytes((UDHR / f"{lang}.txt").read_bytes()[:3000].decode("utf-8", "ignore").encode())
    env = dict(os.environ, CYBPE_SHARED=str(tmp_path / "shared"))
    out = subprocess.run([sys.executable, "-m", "cybpe", "bench", "--json", "--speed-mb", "0.01", "--variants", "gpt2"],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["languages"] == ["en", "th"]
    assert report["text_files"]["th"] == str(ntrex / "th.txt")


def test_line_aligned_texts_are_detected_as_parallel(tmp_path):
    from cybpe.report.variants import detect_parallel

    assert detect_parallel({"en": "a b\nc\n", "th": "ก\nข\n"})
    assert not detect_parallel({"en": "a b\nc\nd\n", "th": "ก\nข\n"})
    assert not detect_parallel({"en": "a b\nc\n"})  # one text is not a parallel set


def test_non_parallel_texts_use_their_own_words_with_a_warning(tmp_path):
    # the eval/docs situation: an English text many times longer than the Hindi one
    en, hi = tmp_path / "en.txt", tmp_path / "hi.txt"
    en.write_text((UDHR / "en.txt").read_text(encoding="utf-8") * 5, encoding="utf-8")
    hi.write_text((UDHR / "hi.txt").read_text(encoding="utf-8"), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "cybpe", "bench", "--json", "--speed-mb", "0.02",
                          "--variants", "abugida", "--texts", str(en), str(hi)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["parallel"] is False and report["word_basis"] == "whitespace"
    assert "warning: the texts are not line-aligned" in out.stderr
    assert report["texts"]["hi"]["words"] == len(hi.read_text(encoding="utf-8").split())
    row = report["results"]["abugida"]["hi"]
    assert row["pieces_per_word"] == pytest.approx(row["pieces"] / report["texts"]["hi"]["words"])
    assert row["pieces_per_word"] > 0.9  # not the 0.07 of dividing by English's word count
    assert row["premium"] is None  # a premium needs the same content


def test_encode_throughput_and_training_time_per_variant(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text((UDHR / "en.txt").read_text(encoding="utf-8"), encoding="utf-8")
    report = bench("--texts", UDHR / "en.txt", UDHR / "hi.txt", "--variants", "gpt2",
                   "--train-corpus", corpus, "--vocab-size", 300)
    summary = report["summary"]["gpt2"]
    assert summary["kind"] == "trained" and summary["encode_mb_s"] > 0 and summary["train_seconds"] > 0
    row = report["results"]["gpt2"]["hi"]
    text = (UDHR / "hi.txt").read_text(encoding="utf-8")
    assert row["chars_per_token"] == pytest.approx(len(text) / row["tokens"])


def test_every_metric_is_defined_once_and_shown_in_help():
    from cybpe.report.metrics import DEFINITIONS
    from cybpe.report.variants import METRICS

    assert set(METRICS) <= set(DEFINITIONS)
    text = subprocess.run([sys.executable, "-m", "cybpe", "bench", "--help"], capture_output=True,
                          text=True, check=True).stdout
    for name in DEFINITIONS:
        assert f"{name}:" in text, name


def test_the_readme_shows_the_same_definitions():
    """The README's metric table is DEFINITIONS as written (the sdist ships the README beside tests/)."""
    from pathlib import Path

    from cybpe.report.metrics import definition_table

    readme = REPO_DIR / "README.md"
    assert definition_table(markdown=True) in readme.read_text(encoding="utf-8")


def test_default_variants_leave_out_phrase_splitters_and_say_why():
    from cybpe.report.variants import NOT_COMPARED_BY_DEFAULT, default_variants

    chosen = default_variants()
    assert "superbpe" not in chosen and "regex" not in chosen
    assert {"gpt2", "cl100k", "o200k", "abugida"} <= set(chosen)
    assert all(reason for reason in NOT_COMPARED_BY_DEFAULT.values())
