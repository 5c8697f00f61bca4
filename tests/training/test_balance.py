"""The language-balanced sample (``cybpe/training/balance.py``) and ``cybpe train --balanced``:
the bytes per language computed here by hand, the cap on up-sampling, the mix in the tokenizer
and in the report."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys

import pytest

from cybpe.errors import InvalidParameterError
from cybpe.training.balance import balanced_sample
from support import UDHR_DIR as UDHR


@pytest.fixture()
def corpus(tmp_path):
    """en: 5 documents of 400 bytes; hi: 2 of 300; th: 1 of 90 (each ends with a blank line)."""
    docs = []
    texts = {lang: (UDHR / f"{lang}.txt").read_bytes() for lang in ("en", "hi", "th")}

    def doc(lang: str, k: int, size: int) -> bytes:
        body = texts[lang][k * 2000:]
        cut = body[: size - 2].decode("utf-8", "ignore").encode("utf-8")
        return cut + b" " * (size - 2 - len(cut)) + b"\n\n"

    for k in range(5):
        docs.append(("en", doc("en", k, 400)))
        if k < 2:
            docs.append(("hi", doc("hi", k, 300)))
    docs.insert(3, ("th", doc("th", 0, 90)))
    data, rows, at = b"", ["offset\tbytes\tlang\tsource"], 0
    for lang, d in docs:
        rows.append(f"{at}\t{len(d)}\t{lang}\ttest")
        data += d
        at += len(d)
    path = tmp_path / "mixed.txt.xz"
    with lzma.open(path, "wb") as f:
        f.write(data)
    with lzma.open(tmp_path / "documents.tsv.xz", "wt", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    return path


def test_sample_by_hand(corpus):
    sample = balanced_sample(corpus, 1000, max_repeat=4)
    assert sample.available == {"en": 2000, "hi": 600, "th": 90}
    assert sample.unique == {"en": 1200, "hi": 600, "th": 90}  # whole documents: 3 x 400 passes 1000
    # hi: 600 bytes, repeated up to 1000 (whole documents: 600 + 300 + 300); th: capped at 4 x 90
    assert sample.sampled == {"en": 1200, "hi": 1200, "th": 360}
    assert [len(t.encode()) for t in sample.texts["th"]] == [90] * 4
    assert sample.mix() == {"en": 1200, "hi": 1200, "th": 360}
    assert sample.repeat["th"] == 4.0
    only = balanced_sample(corpus, 500, languages=["th", "hi"], max_repeat=1)
    assert list(only.texts) == ["th", "hi"] and only.sampled == {"th": 90, "hi": 600}


def test_bad_arguments(corpus, tmp_path):
    for bad in ({"per_language": 0}, {"per_language": 1.5}, {"max_repeat": 0.5}):
        with pytest.raises(InvalidParameterError):
            balanced_sample(corpus, **{"per_language": 100, **bad})
    lonely = tmp_path / "alone" / "c.txt"
    lonely.parent.mkdir()
    lonely.write_text("x")
    with pytest.raises(InvalidParameterError, match="index"):
        balanced_sample(lonely, 100)


def test_cli_recipe_and_the_report_shows_the_mix(corpus, tmp_path):
    out = tmp_path / "tok.json"
    run = subprocess.run([sys.executable, "-m", "cybpe", "train", str(corpus), "--balanced", "0.001", "--max-repeat",
                          "4", "--vocab-size", "300", "--pretokenizer", "abugida", "-o", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "th" in run.stderr and "360" in run.stderr  # the table of bytes per language
    saved = json.loads(out.read_text(encoding="utf-8"))
    import cybpe

    tok = cybpe.Tokenizer.load(out)
    assert tok.metadata["training_mix"] == {"en": 1200, "hi": 1200, "th": 360}
    assert tok.metadata["training"]["balanced"]["max_repeat"] == 4.0
    assert "training_mix" in json.dumps(saved)
    report = json.loads(subprocess.run(
        [sys.executable, "-m", "cybpe", "bench", "--json", "--speed-mb", "0.01", "--variants", "gpt2", "--texts",
         str(UDHR / "en.txt"), str(UDHR / "hi.txt"), str(UDHR / "ta.txt"), "--parallel", "yes",
         "-t", f"balanced={out}"], capture_output=True, text=True, timeout=300, check=True).stdout)
    assert report["summary"]["balanced"]["training_mix"] == {"en": 1200, "hi": 1200, "th": 360}
    assert report["results"]["balanced"]["ta"]["training_flag"] == "none"
    assert report["results"]["balanced"]["hi"]["training_flag"] == "little"
    bad = subprocess.run([sys.executable, "-m", "cybpe", "train", str(corpus), str(corpus), "--balanced", "1",
                          "--vocab-size", "300", "-o", str(tmp_path / "x.json")], capture_output=True, text=True)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "one corpus file" in bad.stderr
