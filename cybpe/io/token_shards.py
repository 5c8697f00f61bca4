"""Token shards: a corpus encoded as many flat id files plus one manifest, written by many tasks
(``cybpe.dask.encode_files``, ``cybpe.spark``), read by training code without cybpe.

The layout of an output folder (format ``cybpe-token-shards``, version 1)::

    part-00000.bin     the ids of the task's byte ranges, flat little-endian uint16/uint32
    part-00000.idx     (megatron=True) the same ids as a Megatron-LM indexed dataset's index
    part-00000.json    the task's record: what it encoded, what it wrote (written after .bin)
    ...
    index.json         the manifest, written last: the dataset is complete once it exists

* The ``part-*.bin`` names sort in input order, and their concatenation in that order is, token
  for token, what :func:`cybpe.encode_files` writes for the same inputs and settings (each
  input file is one document: the ids of its whole text, then the end-of-text id if given).
  ``np.memmap(part, dtype)`` reads one; ``load_tokens(folder)`` all of them.
* ``index.json`` (JSON): ``format``, ``version``, ``dtype`` (``"uint16"``/``"uint32"``), ``eot``
  (the id ending each document, or null), ``tokens`` and ``bytes`` (totals: ids written, UTF-8
  bytes read), ``tokenizer`` (``fingerprint``: sha256 of the vocabulary, merges, special tokens,
  pre-tokenizer and normalizer, that is of everything the ids depend on; ``name``,
  ``n_vocab``), ``shards`` (one object per part in order: ``file``, ``tokens``, ``bytes``,
  ``first_token``: the part's offset in the concatenation) and ``documents`` (``sources``: the
  input of each document; ``offsets``: where each starts in the concatenation, in tokens;
  ``sizes``: its ids, end-of-text included), ``megatron`` (whether ``.idx`` files were written).
* Each task writes its ``.bin`` (and ``.idx``) to a temporary name and renames it into place,
  then its ``.json`` record the same way. A task run again (a killed worker, a re-run of the
  whole call) whose record matches its inputs and settings and whose ``.bin`` has the recorded
  size is not redone; any other is rewritten whole. The manifest is written by the driver after
  every task has finished, so a folder with ``index.json`` is complete, and without it is not.
  Parts of an earlier run that the current one does not have are removed before the manifest.
* Megatron-LM (``megatron=True``): each ``part-NNNNN.bin`` / ``.idx`` pair is one indexed
  dataset in the layout of Megatron-LM's ``megatron/core/datasets/indexed_dataset.py``
  (``_IndexWriter``): the 9-byte header ``MMIDIDX\\x00\\x00``, version 1 (``<Q``), the dtype code
  (``<B``: 8 for uint16; 4, int32, for uint32 ids, whose bytes are the same below 2**31), the
  sequence count and the document-index count (``<Q`` each), the sequence lengths (int32), the
  sequence byte offsets into the ``.bin`` (int64) and the document indices (int64, starting at
  0, one more than the documents). Each document piece in a part is one sequence and one
  document (a document cut between two parts is a document in each). Pass the part prefixes
  to Megatron's ``--data-path``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from cybpe.io.atomic import AtomicFile, atomic_writer

FORMAT = "cybpe-token-shards"
VERSION = 1
MANIFEST = "index.json"
PART = re.compile(r"^part-(\d{5,})\.(bin|idx|json)$")
MEGATRON_HEADER = b"MMIDIDX\x00\x00"
MEGATRON_DTYPE_CODES = {"uint16": 8, "uint32": 4}  # uint32 ids are written as int32 (code 4)


def fingerprint(tokenizer) -> str:
    """sha256 (hex) of everything a tokenizer's ids depend on: its encoder's digest (tokens,
    merges, special tokens), its pre-tokenizer's spec and its normalizer."""
    from cybpe.encode.shared_encoders import key_for

    h = hashlib.sha256(b"cybpe-tokenizer-1\0")
    h.update(key_for(tokenizer).encode())
    h.update(json.dumps(tokenizer.pretokenizer.spec(), sort_keys=True, default=str).encode())
    h.update(repr(tokenizer.normalizer).encode())
    return h.hexdigest()


def part_name(index: int, suffix: str) -> str:
    return f"part-{index:05d}.{suffix}"


def _record_key(task: dict) -> str:
    """What a task's output depends on (its record must carry the same to be reused)."""
    pieces = [(os.fspath(s), start, end, doc, last) for s, start, end, doc, last in task["pieces"]]
    body = json.dumps([pieces, task["fingerprint"], task["dtype"], task["eot"], task["megatron"],
                       sorted(task["allowed_special"]) if isinstance(task["allowed_special"], (set, frozenset, list, tuple)) else task["allowed_special"],
                       sorted(task["disallowed_special"]) if isinstance(task["disallowed_special"], (set, frozenset, list, tuple)) else task["disallowed_special"],
                       task["errors"]], default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def _reusable(folder: str, index: int, key: str, itemsize: int) -> Optional[dict]:
    """The record of a part already written with these inputs and settings, else None."""
    try:
        with open(os.path.join(folder, part_name(index, "json")), "rb") as f:
            record = json.load(f)
        if record.get("key") != key:
            return None
        if os.path.getsize(os.path.join(folder, part_name(index, "bin"))) != record["tokens"] * itemsize:
            return None
        if record.get("megatron") and not os.path.exists(os.path.join(folder, part_name(index, "idx"))):
            return None
        return record
    except (OSError, ValueError, KeyError, TypeError):
        return None


def megatron_index(lengths: Sequence[int], dtype: str) -> bytes:
    """A Megatron-LM ``.idx`` for a ``.bin`` holding ``lengths`` ids per sequence, each sequence
    its own document (the layout: the module docstring)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    itemsize = np.dtype(dtype).itemsize
    pointers = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths):
        pointers[1:] = np.cumsum(lengths[:-1]) * itemsize
    documents = np.arange(len(lengths) + 1, dtype=np.int64)
    return b"".join([
        MEGATRON_HEADER, struct.pack("<Q", 1), struct.pack("<B", MEGATRON_DTYPE_CODES[dtype]),
        struct.pack("<Q", len(lengths)), struct.pack("<Q", len(documents)),
        lengths.astype(np.int32).tobytes(), pointers.tobytes(), documents.tobytes()])


def read_megatron_index(path: str) -> dict[str, Any]:
    """The fields of a Megatron-LM ``.idx`` (for checks; Megatron reads them itself)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:9] != MEGATRON_HEADER:
        raise ValueError(f"{path}: not a Megatron-LM index (header {data[:9]!r})")
    version, = struct.unpack_from("<Q", data, 9)
    code, = struct.unpack_from("<B", data, 17)
    sequences, documents = struct.unpack_from("<QQ", data, 18)
    at = 34
    lengths = np.frombuffer(data, dtype=np.int32, count=sequences, offset=at)
    at += lengths.nbytes
    pointers = np.frombuffer(data, dtype=np.int64, count=sequences, offset=at)
    at += pointers.nbytes
    document_indices = np.frombuffer(data, dtype=np.int64, count=documents, offset=at)
    return {"version": version, "dtype_code": code, "lengths": lengths, "pointers": pointers,
            "document_indices": document_indices, "trailing": len(data) - at - document_indices.nbytes}


def encode_task(tokenizer, task: dict) -> dict:
    """Worker side: encode one task's byte ranges into ``part-NNNNN.bin`` (and ``.idx``), then
    its record; or return the record already there when it matches (a re-run)."""
    from cybpe.api.encode_files import DTYPES
    from cybpe.training.shards import Shard, read_blocks

    folder, index = task["folder"], task["index"]
    dtype = DTYPES[task["dtype"]]
    key = _record_key(task)
    found = _reusable(folder, index, key, dtype.itemsize)
    if found is not None:
        return found
    # The old record goes before the part is rewritten: a run killed while writing it (with
    # other settings) must not leave a record that another run would take for this part's.
    try:
        os.unlink(os.path.join(folder, part_name(index, "json")))
    except FileNotFoundError:
        pass
    split = tokenizer.pretokenizer.split
    pieces, n_tokens, n_bytes = [], 0, 0
    out = AtomicFile(os.path.join(folder, part_name(index, "bin")))
    try:
        for source, start, end, document, last in task["pieces"]:
            first = n_tokens
            for block in read_blocks(Shard(source, start, end), split, task["errors"], task["block_chars"]):
                n_bytes += len(block.encode("utf-8", "surrogatepass"))
                ids = tokenizer.encode_to_numpy(block, allowed_special=task["allowed_special"],
                                                disallowed_special=task["disallowed_special"])
                out.write(ids.astype(dtype, copy=False).tobytes())
                n_tokens += len(ids)
                del block
            if last and task["eot"] is not None:
                out.write(np.array([task["eot"]], dtype=dtype).tobytes())
                n_tokens += 1
            pieces.append([document, n_tokens - first])
        out.commit()
    except BaseException:
        out.abort()
        raise
    if task["megatron"]:
        with atomic_writer(os.path.join(folder, part_name(index, "idx"))) as f:
            f.write(megatron_index([size for _, size in pieces], task["dtype"]))
    record = {"key": key, "file": part_name(index, "bin"), "tokens": n_tokens, "bytes": n_bytes,
              "documents": pieces, "megatron": task["megatron"]}
    with atomic_writer(os.path.join(folder, part_name(index, "json"))) as f:
        f.write(json.dumps(record).encode())
    return record


def plan(tokenizer, sources: list, n_tasks: int, folder: str, *, dtype: str, eot: Optional[int],
         allowed_special: Any, disallowed_special: Any, errors: str, megatron: bool,
         block_chars: int) -> list[dict]:
    """The tasks: ``sources`` cut into byte ranges (:func:`cybpe.shards`, at places where the
    ids cannot change) in at most ``n_tasks`` consecutive groups of about equal bytes."""
    from cybpe.training.shards import group_shards
    from cybpe.training.shards import shards

    cut = shards(sources, n_tasks, tokenizer.pretokenizer, list(tokenizer.special_tokens)) if sources else []
    # shards() keeps the sources' order and each one's ranges in order, the first at byte 0: a
    # new document starts at each range that starts at 0 (a source named twice is two)
    documents, number = [], -1
    for shard in cut:
        number += shard.start == 0
        documents.append(number)
    if number + 1 != len(sources):
        raise AssertionError(f"{len(sources)} sources gave {number + 1} documents")
    fp = fingerprint(tokenizer)
    tasks, k = [], 0
    for i, group in enumerate(group_shards(cut, n_tasks)):
        pieces = []
        for shard in group:
            last = k + 1 == len(cut) or documents[k + 1] != documents[k]
            pieces.append((shard.source, shard.start, shard.end, documents[k], last))
            k += 1
        tasks.append({"folder": folder, "index": i, "pieces": pieces, "fingerprint": fp, "dtype": dtype,
                      "eot": eot, "allowed_special": allowed_special, "disallowed_special": disallowed_special,
                      "errors": errors, "megatron": megatron, "block_chars": block_chars})
    return tasks


def finish(tokenizer, folder: str, tasks: list[dict], records: list[dict], sources: list, *, dtype: str,
           eot: Optional[int]) -> dict:
    """Driver side, after every task: remove parts of earlier runs, then write the manifest."""
    keep = {part_name(t["index"], s) for t in tasks for s in ("bin", "idx", "json")}
    for name in os.listdir(folder):
        if PART.match(name) and name not in keep:
            os.unlink(os.path.join(folder, name))
    sizes = [0] * len(sources)
    shards_out, first = [], 0
    for record in records:
        for document, size in record["documents"]:
            sizes[document] += size
        shards_out.append({"file": record["file"], "tokens": record["tokens"], "bytes": record["bytes"],
                           "first_token": first})
        first += record["tokens"]
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64).tolist() if sizes else []
    manifest = {
        "format": FORMAT, "version": VERSION, "dtype": dtype, "eot": eot,
        "tokens": first, "bytes": sum(r["bytes"] for r in records),
        "tokenizer": {"fingerprint": fingerprint(tokenizer), "name": tokenizer.name, "n_vocab": tokenizer.n_vocab},
        "megatron": bool(tasks and tasks[0]["megatron"]),
        "shards": shards_out,
        "documents": {"sources": [os.fspath(s) for s in sources], "offsets": offsets, "sizes": sizes},
    }
    with atomic_writer(os.path.join(folder, MANIFEST)) as f:
        f.write(json.dumps(manifest, indent=1).encode())
    return manifest


def read_manifest(folder: str) -> dict:
    """The manifest of a finished output folder (ValueError when it is not one this cybpe reads)."""
    with open(os.path.join(folder, MANIFEST), "rb") as f:
        manifest = json.load(f)
    if manifest.get("format") != FORMAT or not isinstance(manifest.get("version"), int) or manifest["version"] > VERSION:
        raise ValueError(f"{folder}: not a {FORMAT} folder of version <= {VERSION}")
    return manifest


def load_tokens(folder: str) -> np.ndarray:
    """Every id of a finished output folder, in order (one array in memory: for checks and small
    sets; training code memory-maps the parts)."""
    manifest = read_manifest(folder)
    parts = [np.fromfile(os.path.join(folder, s["file"]), dtype=np.dtype(manifest["dtype"]).newbyteorder("<"))
             for s in manifest["shards"]]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=manifest["dtype"])


def sources_of(paths: Iterable[Any]) -> list:
    """Inputs as encode_files takes them: paths and URLs, globs expanded (cybpe.files)."""
    from cybpe.training.corpus import files
    from cybpe.training.shards import Shard

    out = []
    for item in files(*paths):
        out.append(item.source if isinstance(item, Shard) else item)
    return out


# -- Parquet in, Parquet out ----------------------------------------------------------------------
# One task per input file: its rows, every column kept, plus an ``ids`` list column
# (Tokenizer.encode_arrow of the text column). Outputs part-NNNNN.parquet in input order, a
# record per part (as above) and a manifest (format cybpe-token-parquet, version 1: ``column``,
# ``ids_column``, ``dtype``, ``tokenizer``, ``parts``: file, source, rows, tokens).

PARQUET_FORMAT = "cybpe-token-parquet"
PARQUET_PART = re.compile(r"^part-(\d{5,})\.(parquet|json)$")


def parquet_task(tokenizer, task: dict) -> dict:
    """Worker side: one Parquet file with its ids column added, written atomically, then its
    record; the record already there when it matches (a re-run)."""
    import pyarrow.parquet as pq

    folder, index = task["folder"], task["index"]
    key = hashlib.sha256(json.dumps([os.fspath(task["source"]), task["fingerprint"], task["dtype"],
                                     task["column"], task["ids_column"], task["errors"]]).encode()).hexdigest()
    target = os.path.join(folder, part_name(index, "parquet"))
    try:
        with open(os.path.join(folder, part_name(index, "json")), "rb") as f:
            record = json.load(f)
        if record.get("key") == key and os.path.exists(target):
            return record
        os.unlink(os.path.join(folder, part_name(index, "json")))  # (as in encode_task)
    except (OSError, ValueError):
        pass
    source = pq.ParquetFile(task["source"])
    if task["column"] not in source.schema_arrow.names:
        from cybpe.errors import InvalidParameterError

        raise InvalidParameterError(f"{task['source']}: no column {task['column']!r} "
                                    f"(it has {', '.join(source.schema_arrow.names)})")
    rows = tokens = 0
    out = AtomicFile(target)
    writer = None
    try:
        for batch in source.iter_batches(batch_size=task["batch_rows"]):
            ids = tokenizer.encode_arrow(batch.column(task["column"]), dtype=task["dtype"], num_threads=1,
                                         errors=task["errors"])
            batch = batch.append_column(task["ids_column"], ids)
            if writer is None:
                writer = pq.ParquetWriter(out.file, batch.schema)
            writer.write_batch(batch)
            rows += batch.num_rows
            tokens += len(ids.values)
        if writer is None:  # no rows: an empty file with the schema
            import pyarrow as pa

            schema = source.schema_arrow.append(pa.field(task["ids_column"], pa.list_(pa.from_numpy_dtype(np.dtype(task["dtype"])))))
            writer = pq.ParquetWriter(out.file, schema)
        writer.close()
        out.commit()
    except BaseException:
        out.abort()
        raise
    record = {"key": key, "file": part_name(index, "parquet"), "source": os.fspath(task["source"]),
              "rows": rows, "tokens": tokens}
    with atomic_writer(os.path.join(folder, part_name(index, "json"))) as f:
        f.write(json.dumps(record).encode())
    return record


def parquet_tasks(tokenizer, sources: list, folder: str, *, column: str, ids_column: str, dtype: str,
                  errors: str, batch_rows: int) -> list[dict]:
    fp = fingerprint(tokenizer)
    return [{"folder": folder, "index": i, "source": source, "fingerprint": fp, "dtype": dtype, "column": column,
             "ids_column": ids_column, "errors": errors, "batch_rows": batch_rows} for i, source in enumerate(sources)]


def finish_parquet(tokenizer, folder: str, tasks: list[dict], records: list[dict], *, column: str,
                   ids_column: str, dtype: str) -> dict:
    keep = {part_name(t["index"], s) for t in tasks for s in ("parquet", "json")}
    for name in os.listdir(folder):
        if PARQUET_PART.match(name) and name not in keep:
            os.unlink(os.path.join(folder, name))
    manifest = {"format": PARQUET_FORMAT, "version": VERSION, "column": column, "ids_column": ids_column,
                "dtype": dtype, "rows": sum(r["rows"] for r in records), "tokens": sum(r["tokens"] for r in records),
                "tokenizer": {"fingerprint": fingerprint(tokenizer), "name": tokenizer.name, "n_vocab": tokenizer.n_vocab},
                "parts": [{"file": r["file"], "source": r["source"], "rows": r["rows"], "tokens": r["tokens"]}
                          for r in records]}
    with atomic_writer(os.path.join(folder, MANIFEST)) as f:
        f.write(json.dumps(manifest, indent=1).encode())
    return manifest
