"""A Hugging Face ``datasets`` batched ``map`` that encodes a text column, with ``num_proc=1`` and
``num_proc=2``, in two ways (issue 41, item 1):

* ``list``: the usual recipe, ``{"ids": tok.encode_ordinary_batch(batch["text"])}`` on Python
  lists (the texts become ``str`` objects, the ids Python lists, which ``datasets`` turns back
  into Arrow);
* ``arrow``: ``with_format("arrow")`` and ``tok.encode_arrow(batch["text"])`` (docs/guide/datasets.md):
  the texts stay in Arrow buffers and the ids are built as an Arrow list column;
  ``arrow-2threads``: the same in one process with ``num_threads=2`` (no ``num_proc``).

The text: the shared evaluation documents of every language (``eval/docs``, about 13 MB) cut
into documents of about 2,000 characters at line ends, repeated ``BENCH_DATASETS_REPEAT`` times
(default 1). The tokenizer: the shared Llama 3 folder.
Each workload runs in a fresh interpreter (test_bench_scale.measured), timed from after the
tokenizer is loaded and the dataset built to the end of ``map`` (the ``num_proc`` workers'
start, and the tokenizer's trip to them by pickle, are counted: that is what the issue measured
as slower with two processes). ``datasets``' cache is off (``load_from_cache_file=False``, a
temporary cache folder), and every workload's ids are checked against ``list`` with
``num_proc=1``.

    CYBPE_SHARED=../shared python -m pytest bench/test_bench_datasets_map.py \\
        --benchmark-group-by=group --benchmark-columns=min,median -s
"""

from __future__ import annotations

import os

import pytest

from bench_support import shared_path
from test_bench_scale import measured

REPEAT = int(os.environ.get("BENCH_DATASETS_REPEAT", "1"))
DIGESTS: dict = {}


@pytest.fixture(scope="module")
def folders():
    pytest.importorskip("datasets")
    pytest.importorskip("pyarrow")
    shared = shared_path()
    if shared is None:
        pytest.skip("the datasets benchmark needs $CYBPE_SHARED (corpora/eval/docs, vocab/llama3)")
    return {"docs": str(shared / "corpora" / "eval" / "docs"), "vocab": str(shared / "vocab" / "llama3")}


@pytest.mark.parametrize("num_proc", [1, 2])
@pytest.mark.parametrize("how", ["list", "arrow", "arrow-2threads"])
def test_datasets_map(benchmark, folders, tmp_path, how, num_proc):
    if how == "arrow-2threads" and num_proc > 1:
        pytest.skip("two threads in each of two processes would ask four cores of two")
    benchmark.group = f"datasets.map(batched=True) of the eval documents x{REPEAT}, Llama 3"
    result = measured(benchmark, """
        if __name__ == "__main__":
            import glob, hashlib, os
            os.environ["HF_DATASETS_CACHE"] = PARAMS["cache"]
            import datasets
            import cybpe

            datasets.disable_progress_bars()
            texts = []
            for path in sorted(glob.glob(os.path.join(PARAMS["docs"], "*.txt"))):
                body = open(path, encoding="utf-8").read()
                start = 0
                while start < len(body):
                    end = body.find("\\n", start + 2000)
                    end = len(body) if end < 0 else end + 1
                    texts.append(body[start:end])
                    start = end
            texts = texts * PARAMS["repeat"]
            size = sum(len(t.encode("utf-8")) for t in texts)
            ds = datasets.Dataset.from_dict({"text": texts})
            tok = cybpe.Tokenizer.from_pretrained(PARAMS["vocab"])

            def encode_lists(batch):
                return {"ids": tok.encode_ordinary_batch(batch["text"], num_threads=1)}

            threads = 2 if PARAMS["how"] == "arrow-2threads" else 1

            def encode_arrow(batch):
                return batch.append_column("ids", tok.encode_arrow(batch["text"], num_threads=threads))

            START = time.perf_counter()
            if PARAMS["how"] == "list":
                out = ds.map(encode_lists, batched=True, num_proc=PARAMS["num_proc"] if PARAMS["num_proc"] > 1 else None,
                             load_from_cache_file=False)
            else:
                out = ds.with_format("arrow").map(encode_arrow, batched=True,
                                                  num_proc=PARAMS["num_proc"] if PARAMS["num_proc"] > 1 else None,
                                                  load_from_cache_file=False)
            seconds = time.perf_counter() - START
            column = out.with_format("arrow")["ids"]
            flat = column.combine_chunks().flatten().to_numpy().astype("uint32")
            START = time.perf_counter() - seconds
            done(texts=len(texts), mb=size / 1e6, tokens=int(len(flat)),
                 digest=hashlib.sha256(flat.tobytes()).hexdigest())
    """, how=how, num_proc=num_proc, repeat=REPEAT, cache=str(tmp_path / "hf-cache"), **folders)
    result["mb_per_s"] = result["mb"] / result["seconds"]
    benchmark.extra_info.update(result)
    print(f"  {how}, num_proc={num_proc}: {result['mb_per_s']:.1f} MB/s ({result['seconds']:.2f} s)")
    DIGESTS[(how, num_proc)] = result["digest"]
    if ("list", 1) in DIGESTS:
        assert result["digest"] == DIGESTS[("list", 1)], f"{how}/{num_proc} gave other ids than list/1"
