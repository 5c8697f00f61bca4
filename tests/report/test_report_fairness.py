"""The fairness report's numbers, recomputed here by hand: bytes (not characters) for --train-mb,
bootstrap intervals over documents, the UTF-8 baseline, fertility, the second inequality measure,
the training mix and its flags, kinds and sizes of the columns, script-group ordering."""

from __future__ import annotations

import json
import lzma
import random
import subprocess
import sys

import numpy as np
import pytest

import cybpe
from cybpe.report import languages
from cybpe.report.variants import (BOOTSTRAP, BOOTSTRAP_SEED, build_report, coefficient_of_variation, gini,
                                   language_order, metric_table, read_prefix, summary_table, training_flag,
                                   training_mix)
from support import UDHR_DIR as UDHR


def _docs(lang: str, n: int = 6) -> str:
    """``n`` aligned documents: the UDHR text's first ``6 * n`` lines, six lines a document."""
    lines = (UDHR / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
    lines = [line for line in lines if line.strip()][: 6 * n]
    return "\n\n".join("\n".join(lines[i:i + 6]) for i in range(0, len(lines), 6))


@pytest.fixture(scope="module")
def small():
    langs = ("en", "hi", "th", "ru")
    texts = {lang: _docs(lang) for lang in langs}
    tok = cybpe.train(["".join((UDHR / f"{lang}.txt").read_text(encoding="utf-8") for lang in langs)], 600)
    tok.name = "t600"
    report = build_report(texts, ["cl100k"], {"cl100k": tok}, parallel=True, speed_mb=0.005,
                          training_mixes={"cl100k": {"en": 200_000, "hi": 50_000, "ru": 1}})
    return texts, tok, report


def test_train_mb_counts_bytes_not_characters(tmp_path):
    path = tmp_path / "c.txt.xz"
    with lzma.open(path, "wt", encoding="utf-8") as f:
        f.write("हिन्दी पाठ\n" * 1000)  # 28 bytes, 11 characters a line
    text = read_prefix(path, 0.001)  # 1000 bytes
    assert len(text.encode("utf-8")) <= 1000
    assert len(text.encode("utf-8")) > 1000 - 28 and text.endswith("\n")


def test_intervals_are_a_bootstrap_over_documents(small):
    texts, tok, report = small
    assert report["bootstrap"]["documents"] == 6
    # recompute: the same resamples (the documented seed and count), by hand
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    draws = rng.integers(0, 6, size=(BOOTSTRAP, 6))
    docs = {lang: t.split("\n\n") for lang, t in texts.items()}
    tokens = {lang: np.array([tok.count(d) for d in docs[lang]]) for lang in texts}
    words = np.array([len(d.split()) for d in docs["en"]])
    for lang in texts:
        row = report["results"]["cl100k"][lang]
        samples = tokens[lang][draws].sum(axis=1) / words[draws].sum(axis=1)
        lo, hi = np.percentile(samples, [2.5, 97.5])
        scale = row["tokens_per_word"] / (tokens[lang].sum() / words.sum())
        assert row["tokens_per_word_ci"] == pytest.approx([lo * scale, hi * scale])
        assert row["tokens_per_word_ci"][0] <= row["tokens_per_word"] <= row["tokens_per_word_ci"][1]
        premium = tokens[lang][draws].sum(axis=1) / tokens["en"][draws].sum(axis=1)
        lo, hi = np.percentile(premium, [2.5, 97.5])
        scale = row["premium"] / (tokens[lang].sum() / tokens["en"].sum())
        assert row["premium_ci"] == pytest.approx([lo * scale, hi * scale])
    gini_ci = report["summary"]["cl100k"]["gini_ci"]
    assert gini_ci[0] < gini_ci[1]


def test_no_intervals_without_aligned_documents():
    texts = {"en": "one two\n\nthree", "hi": "एक दो तीन"}
    tok = cybpe.train(["one two three एक दो तीन"], 300)
    report = build_report(texts, ["cl100k"], {"cl100k": tok}, parallel=True, speed_mb=0.001)
    assert report["bootstrap"] is None
    assert "tokens_per_word_ci" not in report["results"]["cl100k"]["hi"]
    assert any(note.startswith("no 95% intervals") for note in report["notes"])


def test_utf8_baseline_fertility_and_the_second_measure(small):
    texts, tok, report = small
    for lang, text in texts.items():
        base = report["baseline"][lang]
        assert base["byte_premium"] == pytest.approx(len(text.encode()) / len(texts["en"].encode()))
        assert base["char_premium"] == pytest.approx(len(text) / len(texts["en"]))
        assert base["bytes_per_word"] == pytest.approx(len(text.encode()) / len(texts["en"].split()))
        row = report["results"]["cl100k"][lang]
        if languages.info(lang).spaced:  # fertility: tokens per word of the language itself
            assert row["fertility"] == pytest.approx(tok.count(text) / len(text.split()))
        else:
            assert row["fertility"] is None  # th: whitespace "words" are phrases
    s = report["summary"]["cl100k"]
    costs = [report["results"]["cl100k"][lang]["tokens_per_word"] for lang in texts]
    assert s["cv"] == pytest.approx(np.std(costs) / np.mean(costs))
    premiums = {lang: report["results"]["cl100k"][lang]["premium"] for lang in texts if lang != "en"}
    assert s["mean_premium"] == pytest.approx(sum(premiums.values()) / 3)  # English's own 1.0 left out
    assert s["worst_language"] == max(premiums, key=premiums.get)
    assert s["bytes_per_token"] == pytest.approx(sum(len(t.encode()) for t in texts.values())
                                                 / sum(tok.count(t) for t in texts.values()))


def test_gini_is_relative_and_cv_agrees_on_scaling():
    # a tokenizer cheaper everywhere can have the higher Gini: why the page shows a second measure
    a, b = [1.0, 2.0, 3.0], [0.5, 0.6, 2.0]
    assert all(x < y for x, y in zip(b, a[:2])) and gini(b) > gini(a)
    assert coefficient_of_variation([2, 4, 6]) == pytest.approx(coefficient_of_variation([1, 2, 3]))


def test_training_flags_and_mix_from_the_index(small, tmp_path):
    _texts, _tok, report = small
    rows = report["results"]["cl100k"]
    assert rows["en"]["training_flag"] is None
    assert rows["hi"]["training_flag"] == "little" and rows["th"]["training_flag"] == "none"
    assert rows["ru"]["training_flag"] == "little" and rows["hi"]["training_bytes"] == 50_000
    assert training_flag(None, "hi") is None
    table = metric_table(report, "tokens_per_word", markdown=True)
    assert "| th | Thai (SE Asian) |" in table and " †" in table and " *" in table
    # the index beside a corpus gives the bytes per language of a prefix
    corpus = tmp_path / "train.txt"
    corpus.write_bytes(b"a" * 10 + b"b" * 20 + b"c" * 30)
    (tmp_path / "documents.tsv").write_text("offset\tbytes\tlang\tsource\n0\t10\ten\tx\n10\t20\thi\tx\n"
                                            "30\t30\tth\tx\n", encoding="utf-8")
    assert training_mix(corpus, 35) == {"hi": 20, "en": 10, "th": 5}
    assert training_mix(tmp_path / "nowhere" / "x.txt", 5) is None


def test_languages_by_script_group_then_cost(small):
    _texts, _tok, report = small
    order = language_order(report)
    assert order == ["en", "ru", "hi", "th"]  # Latin, Cyrillic, Devanagari, SE Asian
    assert [languages.info(code).group for code in order] == ["Latin", "Cyrillic", "Devanagari", "SE Asian"]
    table = summary_table(report, markdown=True)
    assert "| cl100k | trained | 600 |" in table


def test_kinds_and_sizes_in_the_cli(tmp_path):
    tok = cybpe.train([(UDHR / "en.txt").read_text(encoding="utf-8")], 300)
    tok.save(tmp_path / "own.json")
    out = subprocess.run([sys.executable, "-m", "cybpe", "bench", "--json", "--speed-mb", "0.01", "--variants",
                          "gpt2", "--texts", str(UDHR / "en.txt"), str(UDHR / "hi.txt"),
                          "-t", f"mine={tmp_path / 'own.json'}"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["summary"]["mine"]["kind"] == "own"  # trained with cybpe: its metadata says so
    assert report["vocabularies"]["mine"]["kind"] == "own"
    md = subprocess.run([sys.executable, "-m", "cybpe", "bench", "--markdown", "--speed-mb", "0.01", "--variants",
                         "gpt2", "--texts", str(UDHR / "en.txt"), str(UDHR / "hi.txt"),
                         "-t", f"mine={tmp_path / 'own.json'}"], capture_output=True, text=True, timeout=300).stdout
    assert "| mine 300 |" in md  # the vocabulary size beside the name


def test_train_mb_in_the_cli_is_bytes(tmp_path):
    corpus = tmp_path / "hi.txt"
    rng = random.Random(1)
    corpus.write_text("".join(rng.choice(["नमस्ते दुनिया\n", "भारत\n"]) for _ in range(20000)), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "cybpe", "bench", "--json", "--speed-mb", "0.01", "--variants", "gpt2",
                          "--texts", str(UDHR / "en.txt"), str(UDHR / "hi.txt"), "--train-corpus", str(corpus),
                          "--train-mb", "0.05", "--vocab-size", "300"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    training = json.loads(out.stdout)["training"]
    assert 49_000 < training["bytes"] <= 50_000 and training["chars"] < training["bytes"] / 2


def test_figures_vector_deduplicated_and_split_by_kind(small):
    pytest.importorskip("matplotlib")
    from cybpe.report import plots

    _texts, tok, report = small
    report = json.loads(json.dumps(report))
    # the same vocabulary under a second name is drawn once, its legend naming both
    for key in ("results", "summary"):
        report[key]["copy"] = json.loads(json.dumps(report[key]["cl100k"]))
    report["summary"]["copy"]["kind"] = "vocabulary"
    report["variants"].append("copy")
    assert plots.distinct_columns(report, ["cl100k", "copy"]) == [("cl100k", ["cl100k", "copy"])]
    assert plots.legend_label(report, ["cl100k", "copy"]) == "cl100k = copy (600, trained here)"
    plan = plots.figure_plan(report)
    assert [p[0] for p in plan] == ["cost", "tokenizers", "pieces"]
    figures = plots.figures(report)
    for fig in figures:
        assert fig["png"][:8] == b"\x89PNG\r\n\x1a\n" and fig["pdf"][:5] == b"%PDF-" and b"<svg" in fig["svg"][:2000]
    # more distinct columns than one figure holds: one cost figure per group of kinds
    for k in range(plots.MAX_COLUMNS):
        name = f"v{k}"
        report["variants"].append(name)
        report["summary"][name] = dict(report["summary"]["cl100k"], kind="vocabulary" if k % 2 else "trained")
        report["results"][name] = {lang: dict(row, tokens=row["tokens"] + k + 1)
                                   for lang, row in report["results"]["cl100k"].items()}
    titles = [title for figure, title, _ in plots.figure_plan(report) if figure == "cost"]
    assert titles == ["tokenizers trained with cybpe", "published vocabularies and files"]
