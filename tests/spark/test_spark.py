"""cybpe.spark on a real local[2] Spark session: counts equal cybpe.count, the merges are the
ones of one process, encode() equals encode_ordinary, encode_files equals cybpe.encode_files.

pyspark is not in the test extra (a JVM and 300 MB): the main suite skips this module, and the
CI stage .ci/stage-spark.sh installs pyspark (and a JRE when java is missing) and runs it."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import cybpe
from support import DATA_DIR, UDHR_DIR

pyspark = pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
import cybpe.spark  # noqa: E402
from cybpe.io import token_shards  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    # the executors' Python workers: this interpreter (so they import the cybpe under test)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("cybpe-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "1g").config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _texts() -> list:
    texts = [p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))]
    texts.append((DATA_DIR / "python_sample.txt").read_text(encoding="utf-8"))
    return texts + ["", "héllo <|endoftext|> wörld", "a" * 3000]


@pytest.fixture(scope="module")
def tok() -> cybpe.Tokenizer:
    return cybpe.train(_texts()[:6], vocab_size=600, special_tokens=["<|endoftext|>"], progress=False)


def _frame(spark, texts, partitions=5):
    rows = [(i, t) for i, t in enumerate(texts)]
    return spark.createDataFrame(rows, "n long, text string").repartition(partitions)


def test_count_and_train_a_dataframe(spark):
    texts = _texts()
    df = _frame(spark, texts + [None])
    counts = cybpe.spark.count(df, "cl100k", ["<|endoftext|>"], spark=spark)
    assert counts == cybpe.count(texts, "cl100k", ["<|endoftext|>"])
    tok = cybpe.spark.train(df, 700, special_tokens=["<|endoftext|>"])  # the active session
    assert tok.vocab.merges == cybpe.train(texts, 700, special_tokens=["<|endoftext|>"], progress=False).vocab.merges
    assert cybpe.spark.count(df.limit(0), spark=spark) == cybpe.count([])
    with pytest.raises(cybpe.errors.InvalidParameterError, match="no column"):
        cybpe.spark.count(df, column="body", spark=spark)


def test_count_and_train_files(spark, tmp_path):
    for k, text in enumerate(_texts()):
        (tmp_path / f"{k:02d}.txt").write_text(text * 2, encoding="utf-8")
    local = cybpe.count(cybpe.files(tmp_path), "o200k")
    assert cybpe.spark.count(str(tmp_path / "*.txt"), "o200k", spark=spark, n_shards=7) == local
    assert cybpe.spark.count([tmp_path], "o200k", spark=spark) == local
    tok = cybpe.spark.train(tmp_path, 800, "o200k", spark=spark)
    assert tok.vocab.merges == cybpe.train(local, 800).vocab.merges


def test_encode_adds_an_ids_column(spark, tok):
    texts = _texts() + [None]
    df = _frame(spark, texts, partitions=7)
    out = cybpe.spark.encode(df, "text", tok, spark=spark)
    assert out.columns == ["n", "text", "ids"]
    assert out.schema["ids"].dataType.simpleString() == "array<int>"
    rows = sorted(out.collect(), key=lambda r: r["n"])
    assert [r["ids"] for r in rows] == [None if t is None else tok.encode_ordinary(t) for t in texts]
    assert [r["text"] for r in rows] == texts
    wide = cybpe.spark.encode(df, "text", tok, ids_column="tokens", dtype="int64")
    assert wide.schema["tokens"].dataType.simpleString() == "array<bigint>"
    assert sorted(((r["n"], r["tokens"]) for r in wide.collect()), key=lambda x: x[0])[0][1] == tok.encode_ordinary(texts[0])
    with pytest.raises(cybpe.errors.InvalidParameterError):
        cybpe.spark.encode(df, "text", tok, dtype="uint32")
    with pytest.raises(cybpe.errors.InvalidParameterError, match="no column"):
        cybpe.spark.encode(df, "body", tok)
    with pytest.raises(cybpe.errors.InvalidParameterError, match="already"):
        cybpe.spark.encode(out, "text", tok)


def test_the_tokenizer_is_broadcast_once(spark, tok, monkeypatch):
    calls = []
    original = spark.sparkContext.broadcast
    monkeypatch.setattr(spark.sparkContext, "broadcast", lambda value: calls.append(value) or original(value))
    df = _frame(spark, _texts(), partitions=6)
    assert len(cybpe.spark.encode(df, "text", tok).collect()) == len(_texts())
    assert calls == [tok]


def test_encode_files_equals_encode_files(spark, tok, tmp_path):
    paths = []
    for k, text in enumerate(_texts()):
        paths.append(tmp_path / f"{k:02d}.txt")
        paths[-1].write_text(text * 3, encoding="utf-8")
    reference = tmp_path / "reference.bin"
    cybpe.encode_files(tok, paths, reference, dtype="uint16", eot=True, allowed_special="all")
    manifest = cybpe.spark.encode_files(paths, tok, tmp_path / "out", dtype="uint16", eot=True,
                                        allowed_special="all", spark=spark, n_tasks=4, megatron=True)
    expected = np.fromfile(reference, dtype="uint16")
    assert manifest["tokens"] == len(expected)
    parts = sorted(n for n in os.listdir(tmp_path / "out") if n.endswith(".bin"))
    assert np.array_equal(np.concatenate([np.fromfile(tmp_path / "out" / n, dtype="uint16") for n in parts]), expected)
    assert np.array_equal(token_shards.load_tokens(tmp_path / "out"), expected)
