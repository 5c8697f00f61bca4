"""Encoding a corpus into token shards on one process, two threads, a 2-worker Dask LocalCluster
and Spark local[2]; and encode_arrow against encode_ordinary_batch + pa.array on the same texts.

    BENCH_SCALEOUT_MB=1024 python -m pytest bench/test_bench_scaleout.py --benchmark-group-by=group \
        --benchmark-columns=min,median -s

Sizes come from the environment: BENCH_SCALEOUT_MB (default 16: a quick run; 1024 is the
issue's 1 GB), BENCH_SCALEOUT_ARROW_MB (the texts of the Arrow rows, default 8). The corpus is
bench/scale_corpus.py's resampled training corpus (it needs $CYBPE_SHARED). The vocabulary:
cl100k (uint32 ids).

The shard workloads run each in a fresh interpreter (test_bench_scale.measured): the time starts
after the tokenizer is loaded and the cluster or the Spark session (and its Python workers) is
up (start-up is not encoding; shipping the tokenizer to the workers is counted), ``peak_mib`` is the
largest resident set of the process or of any of its worker processes (Dask's workers, Spark's
Python workers; not Spark's JVM, whose heap is Spark's own), taken when the encoding ends, before
the output is read back (in blocks) for the check, ``mb_per_s`` is the corpus's MB (10**6 bytes) per second and
``mb_per_s_per_core`` that over the cores the workload used (1 for local-1, else 2). Every
workload's output is checked against local-1's, token for token. The cluster rows are meant to
be within 20% of local-2.

pyspark is optional (the spark row skips without it); Spark needs java on PATH.
"""

from __future__ import annotations

import hashlib
import os

import pytest

import scale_corpus
from bench_support import shared_path
from test_bench_scale import measured

MB = int(os.environ.get("BENCH_SCALEOUT_MB", "16"))
ARROW_MB = int(os.environ.get("BENCH_SCALEOUT_ARROW_MB", "8"))
CORES = {"local-1": 1, "local-2": 2, "dask-2": 2, "spark-2": 2}
DIGESTS: dict = {}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    shared = shared_path()
    if shared is None:
        pytest.skip("the scale-out benchmarks need $CYBPE_SHARED (corpora/train, vocab/cl100k_base.tiktoken)")
    folder = tmp_path_factory.mktemp("scaleout")
    files = scale_corpus.build_corpus(folder / "corpus", MB, source=scale_corpus.source_path(shared),
                                      file_megabytes=max(1, min(64, MB // 8)))
    return {"files": [str(p) for p in files], "folder": str(folder),
            "vocab": str(shared / "vocab" / "cl100k_base.tiktoken"),
            "bytes": sum(os.path.getsize(p) for p in files)}


@pytest.mark.parametrize("how", ["local-1", "local-2", "dask-2", "spark-2"])
def test_encode_to_shards(benchmark, corpus, how):
    benchmark.group = f"encode {MB} MB to uint32 shards"
    if how == "dask-2":
        pytest.importorskip("distributed")
    if how == "spark-2":
        pytest.importorskip("pyspark")
    out = os.path.join(corpus["folder"], f"out-{how}")
    result = measured(benchmark, """
        if __name__ == "__main__":
            import glob, os, sys, hashlib
            import cybpe

            def hwm_mib(pid="self"):
                with open(f"/proc/{pid}/status") as f:
                    return next((int(x.split()[1]) for x in f if x.startswith("VmHWM:")), 0) / 1024

            def shards(folder):
                return sorted(glob.glob(os.path.join(folder, "part-*.bin")))

            def worker_peak_mib(client):
                return max(client.run(hwm_mib).values())

            def spark_peak_mib():
                # Spark's Python workers are this process's descendants (through the JVM);
                # the JVM itself is left out: its heap is Spark's, not the encoding's.
                parents = {}
                for entry in os.listdir("/proc"):
                    if entry.isdigit():
                        try:
                            with open(f"/proc/{entry}/stat") as f:
                                parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
                        except OSError:
                            pass
                peak, me = 0.0, os.getpid()
                for pid in parents:
                    up = pid
                    while up in parents and up != me:
                        up = parents[up]
                    if up == me and pid != me:
                        try:
                            with open(f"/proc/{pid}/cmdline", "rb") as f:
                                if b"java" in f.read().split(b"\\0")[0]:
                                    continue
                            peak = max(peak, hwm_mib(pid))
                        except OSError:
                            pass
                return peak

            START = time.perf_counter()
            how, files, out = PARAMS["how"], PARAMS["files"], PARAMS["out"]
            tok = cybpe.Tokenizer.from_tiktoken(PARAMS["vocab"])
            if how.startswith("local"):
                START = time.perf_counter()
                cybpe.encode_files(tok, files, out + ".bin", dtype="uint32", eot=True, workers=int(how[-1]))
                seconds = time.perf_counter() - START
                outputs = [out + ".bin"]
            elif how == "dask-2":
                import cybpe.dask
                from distributed import Client, LocalCluster
                with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, Client(cluster) as client:
                    START = time.perf_counter()  # the cluster's start-up is not encoding
                    cybpe.dask.encode_files(files, tok, out, dtype="uint32", eot=True, client=client)
                    seconds = time.perf_counter() - START
                    encode_peak = worker_peak_mib(client)
                outputs = shards(out)
            else:
                os.environ["PYSPARK_PYTHON"] = sys.executable
                import cybpe.spark
                from pyspark.sql import SparkSession
                spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                         .config("spark.driver.memory", "2g").getOrCreate())
                spark.sparkContext.setLogLevel("ERROR")
                spark.sparkContext.parallelize(range(4), 2).map(lambda x: x).count()  # JVM and Python workers up
                START = time.perf_counter()
                cybpe.spark.encode_files(files, tok, out, dtype="uint32", eot=True, spark=spark)
                seconds = time.perf_counter() - START
                encode_peak = spark_peak_mib()
                spark.stop()
                outputs = shards(out)
            START = time.perf_counter() - seconds
            peak = peak_mib() if how.startswith("local") else max(hwm_mib(), encode_peak)
            # The check reads the output in 16 MiB blocks, after the peak is taken: loading 1 GB
            # of ids at once would be the run's largest resident set.
            digest, size = hashlib.sha256(), 0
            for path in outputs:
                with open(path, "rb") as f:
                    for block in iter(lambda: f.read(1 << 24), b""):
                        digest.update(block)
                        size += len(block)
            done(tokens=size // 4, digest=digest.hexdigest(), encode_peak_mib=peak)
    """, how=how, files=corpus["files"], out=out, vocab=corpus["vocab"])
    mb = corpus["bytes"] / 1e6
    result["mb_per_s"] = mb / result["seconds"]
    result["mb_per_s_per_core"] = result["mb_per_s"] / CORES[how]
    result["peak_mib"] = result.pop("encode_peak_mib")
    benchmark.extra_info.update(result)
    print(f"  {how}: {result['mb_per_s']:.1f} MB/s, {result['mb_per_s_per_core']:.1f} MB/s per core, "
          f"peak {result['peak_mib']:.0f} MiB")
    DIGESTS[how] = result["digest"]
    if "local-1" in DIGESTS:
        assert result["digest"] == DIGESTS["local-1"], f"{how} wrote other ids than local-1"


@pytest.fixture(scope="module")
def arrow_texts(corpus):
    pa = pytest.importorskip("pyarrow")
    texts, size = [], 0
    for path in corpus["files"]:
        with open(path, encoding="utf-8") as f:
            for doc in f.read().split("\n\n"):
                texts.append(doc)
                size += len(doc.encode("utf-8"))
                if size >= ARROW_MB * 1_000_000:
                    break
        if size >= ARROW_MB * 1_000_000:
            break
    import cybpe

    tok = cybpe.Tokenizer.from_tiktoken(corpus["vocab"])
    return tok, texts, pa.array(texts, type=pa.large_string())


@pytest.mark.parametrize("how", ["encode_arrow", "list+pa.array"])
@pytest.mark.parametrize("threads", [1, 2])
def test_arrow_vs_list(benchmark, arrow_texts, how, threads):
    import pyarrow as pa

    tok, texts, array = arrow_texts
    benchmark.group = f"{ARROW_MB} MB of documents to a list<uint32> column, {threads} thread(s)"
    if how == "encode_arrow":
        run = lambda: tok.encode_arrow(array, num_threads=threads)
    else:
        run = lambda: pa.array(tok.encode_ordinary_batch(texts, num_threads=threads), type=pa.large_list(pa.uint32()))
    out = benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    benchmark.extra_info["texts"] = len(texts)
    digest = hashlib.sha256(out.flatten().to_numpy().astype("uint32").tobytes()).hexdigest()
    DIGESTS.setdefault(f"arrow-{threads}", digest)
    assert DIGESTS[f"arrow-{threads}"] == digest
