"""Counting and training at scale: a >= 1 GB resampled corpus and 10 M distinct chunks.

    python -m pytest bench/test_bench_scale.py --benchmark-group-by=group -s
    BENCH_SCALE_SMOKE=1 python -m pytest bench/test_bench_scale.py   (small sizes, a minute)

Inputs are built by bench/scale_corpus.py into a temporary folder (BENCH_SCALE_MB, default
1024; BENCH_SCALE_DISTINCT, default 10 M). Every workload runs in its own process, so the peak
RSS it reports (``extra_info['peak_mib']``, the process's own maximum resident set, children
included, from /proc: Linux only) is that workload's alone; the timing includes the interpreter's start (about 0.5 s).
Ratios: compare the rows of one group (pytest-benchmark prints min and median).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import scale_corpus
from bench_support import shared_path

VOCAB = 4096 if scale_corpus.SMOKE else 65_536
VOCAB_DISTINCT = 512 if scale_corpus.SMOKE else 1024
CL100K = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""

# Peak RSS: VmHWM of this process (ru_maxrss would keep the forking pytest process's peak:
# Linux carries it across exec), and the largest child (worker processes) from getrusage.
PRELUDE = """
import json, resource, sys, time
def peak_mib():
    with open("/proc/self/status") as f:
        own = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    return max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
def done(**info):
    print("RESULT" + json.dumps(dict(info, seconds=time.perf_counter() - START, peak_mib=peak_mib())))
"""


def measured(benchmark, code: str, **params) -> dict:
    """Run ``code`` (which calls ``done(...)``) in a fresh interpreter, once, as the benchmark."""
    script = PRELUDE + f"PARAMS = {params!r}\n" + textwrap.dedent(code)
    result: dict = {}

    def run() -> None:
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        if out.returncode:
            raise AssertionError(f"the workload failed:\n{out.stderr[-3000:]}")
        line = [x for x in out.stdout.splitlines() if x.startswith("RESULT")][-1]
        result.update(json.loads(line[len("RESULT"):]))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    print(f"\n{benchmark.group} {benchmark.name}: {result}")
    return result


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    if shared_path() is None:
        pytest.skip("scale benchmarks need $CYBPE_SHARED/corpora/train/mixed-train.txt.xz")
    folder = tmp_path_factory.mktemp("scale")
    files = scale_corpus.build_corpus(folder / "corpus", source=scale_corpus.source_path(shared_path()))
    words = folder / "distinct.txt"
    words.write_text(scale_corpus.distinct_words(scale_corpus.DISTINCT), encoding="ascii")
    return {"files": [str(p) for p in files], "words": str(words), "folder": str(folder)}


MB = scale_corpus.CORPUS_MB


@pytest.mark.parametrize("how", ["local-1", "local-2", "dask-2"])
def test_count(benchmark, inputs, how):
    """Counting throughput: one process, two processes, a 2-worker Dask LocalCluster."""
    benchmark.group = f"count {MB} MB"
    pytest.importorskip("distributed") if how.startswith("dask") else None
    result = measured(benchmark, """
        if __name__ == "__main__":
            import cybpe
            START = time.perf_counter()
            how, files = PARAMS["how"], PARAMS["files"]
            if how.startswith("dask"):
                import cybpe.dask
                from distributed import Client, LocalCluster
                with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, Client(cluster) as client:
                    START = time.perf_counter()  # the cluster's start-up is not counting
                    counts = cybpe.dask.count(files, "cl100k", client=client)
            else:
                counts = cybpe.count(cybpe.files(*files), "cl100k", workers=int(how[-1]))
            done(unique=len(counts), total=counts.total)
    """, how=how, files=inputs["files"])
    assert result["total"] > 0


@pytest.mark.parametrize("corpus", ["resampled", "distinct"])
@pytest.mark.parametrize("lib", ["cybpe", "rustbpe", "hf"])
def test_train_end_to_end(benchmark, inputs, lib, corpus):
    """Files to a vocabulary, counting included (2 workers / threads each): the resampled
    corpus to VOCAB tokens, and the DISTINCT distinct words (high cardinality: the cost is the
    chunks, not the bytes) to VOCAB_DISTINCT tokens."""
    files, vocab = (inputs["files"], VOCAB) if corpus == "resampled" else ([inputs["words"]], VOCAB_DISTINCT)
    benchmark.group = (f"train {MB} MB to {vocab}" if corpus == "resampled"
                       else f"train {scale_corpus.DISTINCT} distinct words to {vocab}")
    pytest.importorskip({"cybpe": "cybpe", "rustbpe": "rustbpe", "hf": "tokenizers"}[lib])
    measured(benchmark, """
        if __name__ == "__main__":
            START = time.perf_counter()
            lib, files, vocab = PARAMS["lib"], PARAMS["files"], PARAMS["vocab"]
            def documents():
                for path in files:
                    with open(path, encoding="utf-8") as f:
                        yield from (d for d in f.read().split("\\n\\n") if d)
            if lib == "cybpe":
                import cybpe
                tok = cybpe.train(cybpe.files(*files), vocab, "cl100k", workers=2, progress=False)
                done(vocab=tok.n_vocab)
            elif lib == "rustbpe":
                import rustbpe
                tok = rustbpe.Tokenizer()
                tok.train_from_iterator(documents(), vocab, pattern=PARAMS["cl100k"])
                done(vocab=vocab)
            else:
                import tokenizers
                from tokenizers import Regex, models, pre_tokenizers, trainers
                tok = tokenizers.Tokenizer(models.BPE())
                tok.pre_tokenizer = pre_tokenizers.Sequence([
                    pre_tokenizers.Split(Regex(PARAMS["llama3"]), "isolated"),
                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
                trainer = trainers.BpeTrainer(vocab_size=vocab, show_progress=False,
                                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
                tok.train_from_iterator(documents(), trainer)
                done(vocab=tok.get_vocab_size())
    """, lib=lib, files=files, vocab=vocab, cl100k=CL100K, llama3=LLAMA3)


@pytest.mark.parametrize("step", ["save", "load", "load+train"])
def test_counts_file_of_distinct_chunks(benchmark, inputs, step):
    """The binary counts file with DISTINCT distinct chunks: save, load, load then train."""
    benchmark.group = f"counts file, {scale_corpus.DISTINCT} distinct chunks"
    path = Path(inputs["folder"]) / "distinct.counts"
    if step != "save" and not path.exists():
        pytest.skip("needs the save step first (run the whole file)")
    result = measured(benchmark, """
        import cybpe
        step, words, path = PARAMS["step"], PARAMS["words"], PARAMS["path"]
        if step == "save":
            counts = cybpe.count(cybpe.files(words), "cl100k")
            START = time.perf_counter()
            counts.save(path)
        else:
            START = time.perf_counter()
            counts = cybpe.ChunkCounts.load(path)
            if step == "load+train":
                cybpe.train(counts, 1024, progress=False)
        import os
        done(unique=len(counts), file_bytes=os.path.getsize(path))
    """, step=step, words=inputs["words"], path=str(path))
    assert result["unique"] >= scale_corpus.DISTINCT


def test_memory_cap_on_distinct_chunks(benchmark, inputs):
    """max_bytes on the distinct words plus two corpus files: the capped table's size and the
    process's peak RSS against the cap, the undercount bound, and how many merges equal the
    exact ones: they can part only at a merge whose exact count is within max_pair_undercount
    (the dropped occurrences' pair positions) of the capped run's."""
    benchmark.group = "memory cap"
    cap = 1 << 20 if scale_corpus.SMOKE else 64 << 20
    result = measured(benchmark, """
        import cybpe
        START = time.perf_counter()
        inputs = [PARAMS["words"]] + PARAMS["files"][:2]
        before = peak_mib()
        capped = cybpe.count(cybpe.files(*inputs), "cl100k", max_bytes=PARAMS["cap"])
        counting_peak = peak_mib()
        capped_tok = cybpe.train(capped, 2048, progress=False)
        capped_peak, capped_seconds = peak_mib(), time.perf_counter() - START
        exact = cybpe.count(cybpe.files(*inputs), "cl100k")
        exact_tok = cybpe.train(exact, 2048, progress=False)
        agree = 0
        for a, b in zip(capped_tok.merges, exact_tok.merges):
            if a != b:
                break
            agree += 1
        capped_counts = capped_tok.metadata["training"]["merge_counts"]
        exact_counts = exact_tok.metadata["training"]["merge_counts"]
        done(cap_mib=PARAMS["cap"] / 2**20, capped_table_mib=capped.nbytes / 2**20,
             exact_table_mib=exact.nbytes / 2**20, exact_unique=len(exact), capped_unique=len(capped),
             max_undercount=capped.max_undercount, merges_equal_prefix=agree,
             peak_mib_before_counting=before, peak_mib_counting=counting_peak, peak_mib_capped=capped_peak,
             max_pair_undercount=capped.max_pair_undercount,
             counts_at_first_difference=[capped_counts[agree], exact_counts[agree]]
             if agree < min(len(capped_counts), len(exact_counts)) else None,
             capped_seconds=capped_seconds, exact=capped.exact)
    """, cap=cap, words=inputs["words"], files=inputs["files"])
    assert result["max_undercount"] > 0 and result["capped_unique"] < result["exact_unique"]
    assert result["capped_table_mib"] <= result["cap_mib"]
    # counting adds at most the cap to the process (the cap covers the block being counted)
    assert result["peak_mib_counting"] - result["peak_mib_before_counting"] <= result["cap_mib"], result
    if result["counts_at_first_difference"]:  # they part only where the bound allows it
        capped_count, exact_count = result["counts_at_first_difference"]
        assert capped_count <= exact_count <= capped_count + result["max_pair_undercount"], result
