"""cybpe.dask.encode_files / encode_parquet on a real two-process LocalCluster: the parts,
concatenated in name order, equal cybpe.encode_files token for token; the manifest, re-runs of
killed tasks, Megatron-LM indexes, Parquet in and out (cybpe/io/token_shards.py)."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest

import cybpe
import cybpe.dask
from cybpe.io import token_shards
from support import DATA_DIR, UDHR_DIR

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  memory_limit="1GiB") as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def tok() -> cybpe.Tokenizer:
    texts = [p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))[:6]]
    return cybpe.train(texts, vocab_size=600, special_tokens=["<|endoftext|>"], progress=False)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list:
    """Plain files of several sizes, a gzip file, an empty file, a file named twice."""
    folder = tmp_path_factory.mktemp("corpus")
    paths = []
    for p in sorted(UDHR_DIR.glob("*.txt"))[:8]:
        paths.append(folder / p.name)
        paths[-1].write_text(p.read_text(encoding="utf-8") * 3, encoding="utf-8")
    (folder / "code.txt.gz").write_bytes(gzip.compress((DATA_DIR / "python_sample.txt").read_bytes()))
    (folder / "empty.txt").write_bytes(b"")
    (folder / "special.txt").write_text("before <|endoftext|> after\n" * 50, encoding="utf-8")
    return paths[:4] + [folder / "code.txt.gz", folder / "empty.txt"] + paths[4:] + [paths[0], folder / "special.txt"]


def _reference(tok, paths, tmp_path, **options) -> np.ndarray:
    out = tmp_path / "reference.bin"
    cybpe.encode_files(tok, paths, out, **options)
    return np.fromfile(out, dtype=options.get("dtype", "uint32"))


def _parts(folder) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(".bin"))


def _concatenated(folder, dtype) -> np.ndarray:
    return np.concatenate([np.fromfile(os.path.join(folder, n), dtype=dtype) for n in _parts(folder)])


@pytest.mark.parametrize("n_tasks", [1, 3, 8])
def test_parts_concatenate_to_encode_files(client, tok, corpus, tmp_path, n_tasks):
    options = {"dtype": "uint16", "eot": True, "allowed_special": "all"}
    expected = _reference(tok, corpus, tmp_path, **options)
    out = tmp_path / "out"
    manifest = cybpe.dask.encode_files(corpus, tok, out, client=client, n_tasks=n_tasks, **options)
    assert len(_parts(out)) <= n_tasks and len(_parts(out)) == len(manifest["shards"])
    assert np.array_equal(_concatenated(out, "uint16"), expected)  # name order, without the manifest
    assert np.array_equal(token_shards.load_tokens(out), expected)
    # the manifest
    assert manifest == json.loads((out / "index.json").read_text())
    assert manifest["format"] == "cybpe-token-shards" and manifest["version"] == 1
    assert manifest["tokens"] == len(expected) and manifest["dtype"] == "uint16"
    assert manifest["eot"] == tok.special_tokens["<|endoftext|>"]
    assert manifest["tokenizer"]["fingerprint"] == token_shards.fingerprint(tok)
    docs = manifest["documents"]
    assert docs["sources"] == [os.fspath(p) for p in corpus]
    for source, offset, size in zip(docs["sources"], docs["offsets"], docs["sizes"]):
        one = _reference(tok, [source], tmp_path, **options)
        assert size == len(one) and np.array_equal(expected[offset:offset + size], one), source
    assert sum(s["tokens"] for s in manifest["shards"]) == len(expected)
    assert [s["first_token"] for s in manifest["shards"]] == list(np.cumsum([0] + [s["tokens"] for s in manifest["shards"]])[:-1])


def test_without_a_client_and_default_settings(tok, corpus, tmp_path):
    expected = _reference(tok, corpus[:-1], tmp_path)  # special.txt would raise: disallowed by default
    with dask.config.set(scheduler="sync"):
        manifest = cybpe.dask.encode_files(corpus[:-1], tok, tmp_path / "out", n_tasks=4)
    assert manifest["eot"] is None and manifest["dtype"] == "uint32"
    assert np.array_equal(_concatenated(tmp_path / "out", "uint32"), expected)
    with pytest.raises(cybpe.errors.DisallowedSpecialTokenError):
        with dask.config.set(scheduler="sync"):
            cybpe.dask.encode_files(corpus, tok, tmp_path / "bad", n_tasks=2)
    assert not (tmp_path / "bad" / "index.json").exists()


def test_a_killed_task_is_redone_and_nothing_else(client, tok, corpus, tmp_path):
    options = {"dtype": "uint32", "eot": True, "allowed_special": "all"}
    expected = _reference(tok, corpus, tmp_path, **options)
    out = tmp_path / "out"
    first = cybpe.dask.encode_files(corpus, tok, out, client=client, n_tasks=5, **options)
    stamps = {n: os.stat(out / n).st_mtime_ns for n in os.listdir(out)}
    # a task killed before its rename left a temporary file and no part; the run died before
    # the manifest; another part's .bin was cut short (a record that no longer fits)
    os.unlink(out / "part-00002.bin")
    os.unlink(out / "index.json")
    (out / ".part-00002.bin.tmp-dead").write_bytes(b"\0" * 10)
    with open(out / "part-00004.bin", "r+b") as f:
        f.truncate(8)
    again = cybpe.dask.encode_files(corpus, tok, out, client=client, n_tasks=5, **options)
    assert again == first
    assert np.array_equal(token_shards.load_tokens(out), expected)
    redone = {n for n in stamps if n in os.listdir(out) and os.stat(out / n).st_mtime_ns != stamps[n]}
    assert redone <= {"part-00002.bin", "part-00002.json", "part-00004.bin", "part-00004.json", "index.json"}
    assert "part-00000.bin" not in redone and "part-00001.bin" not in redone
    # fewer tasks on the next run: the parts it does not have are removed before the manifest
    cybpe.dask.encode_files(corpus, tok, out, client=client, n_tasks=2, **options)
    assert len(_parts(out)) <= 2 and not (out / "part-00004.json").exists()
    assert np.array_equal(_concatenated(out, "uint32"), expected)
    # other settings: nothing reused
    cybpe.dask.encode_files(corpus, tok, out, client=client, n_tasks=2, dtype="uint16", eot=None, allowed_special="all")
    assert np.array_equal(_concatenated(out, "uint16"), _reference(tok, corpus, tmp_path, dtype="uint16", allowed_special="all"))


@pytest.mark.parametrize("dtype, code", [("uint16", 8), ("uint32", 4)])
def test_megatron_indexes(client, tok, corpus, tmp_path, dtype, code):
    out = tmp_path / "out"
    manifest = cybpe.dask.encode_files(corpus, tok, out, client=client, n_tasks=3, dtype=dtype, eot=True,
                                       allowed_special="all", megatron=True)
    assert manifest["megatron"]
    expected = _reference(tok, corpus, tmp_path, dtype=dtype, eot=True, allowed_special="all")
    record_docs = []
    for part in _parts(out):
        data = np.fromfile(out / part, dtype=dtype)
        index = token_shards.read_megatron_index(str(out / part.replace(".bin", ".idx")))
        assert index["version"] == 1 and index["dtype_code"] == code and index["trailing"] == 0
        assert index["lengths"].sum() == len(data)
        assert list(index["document_indices"]) == list(range(len(index["lengths"]) + 1))
        itemsize = np.dtype(dtype).itemsize
        for pointer, length in zip(index["pointers"], index["lengths"]):
            record_docs.append(data[pointer // itemsize:pointer // itemsize + length])
    assert np.array_equal(np.concatenate(record_docs), expected)
    # each document is whole in one part or cut between parts: its pieces add up
    assert sum(len(d) for d in record_docs) == sum(manifest["documents"]["sizes"])


def test_parquet_in_and_out(client, tok, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    texts = [p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))[:10]] + [None, ""]
    inputs = []
    for k in range(3):
        part = texts[k::3]
        path = tmp_path / f"in-{k}.parquet"
        pq.write_table(pa.table({"id": list(range(k, len(texts), 3)), "text": part,
                                 "lang": [f"l{i}" for i in range(len(part))]}), path, row_group_size=2)
        inputs.append(path)
    empty = tmp_path / "in-3.parquet"
    pq.write_table(pa.table({"id": pa.array([], pa.int64()), "text": pa.array([], pa.string()),
                             "lang": pa.array([], pa.string())}), empty)
    inputs.append(empty)
    out = tmp_path / "out"
    manifest = cybpe.dask.encode_parquet(inputs, tok, out, client=client, dtype="uint16", batch_rows=3)
    assert manifest["format"] == "cybpe-token-parquet" and [p["source"] for p in manifest["parts"]] == [os.fspath(p) for p in inputs]
    table = pa.concat_tables([pq.read_table(out / p["file"]) for p in manifest["parts"]])
    assert table.column_names == ["id", "text", "lang", "ids"]
    assert table.schema.field("ids").type == pa.list_(pa.uint16())
    rows = table.to_pylist()
    for row in rows:
        assert row["ids"] == (None if row["text"] is None else tok.encode_ordinary(row["text"]))
    assert sorted(r["id"] for r in rows) == list(range(len(texts)))
    assert manifest["rows"] == len(texts) and manifest["tokens"] == sum(len(r["ids"] or []) for r in rows)
    stamp = os.stat(out / "part-00000.parquet").st_mtime_ns
    assert cybpe.dask.encode_parquet(inputs, tok, out, client=client, dtype="uint16") == manifest
    assert os.stat(out / "part-00000.parquet").st_mtime_ns == stamp  # reused
    with pytest.raises(cybpe.errors.InvalidParameterError, match="no column"):
        cybpe.dask.encode_parquet(inputs[:1], tok, tmp_path / "bad", column="body", client=client)


def test_worker_tasks_run_under_roomy_malloc(tok, corpus, tmp_path, monkeypatch):
    """Each shard task enters roomy_malloc (the nanny's MALLOC_TRIM_THRESHOLD_ otherwise makes
    every block's buffers fresh mmaps); run on Dask's local scheduler, in this process."""
    import contextlib

    entered = []

    @contextlib.contextmanager
    def recording():
        entered.append(True)
        yield True

    monkeypatch.setattr(cybpe.dask, "roomy_malloc", recording)
    # In this process (a Client made by another test would otherwise take the tasks).
    monkeypatch.setitem(dask.config.config, "scheduler", "sync")
    cybpe.dask.encode_files(corpus[:3], tok, tmp_path / "bin", client=None, n_tasks=2)
    assert len(entered) == 2
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    source = tmp_path / "texts.parquet"
    pq.write_table(pa.table({"text": ["a b c", "déjà vu"]}), source)
    cybpe.dask.encode_parquet([source], tok, tmp_path / "pq", client=None)
    assert len(entered) > 2
