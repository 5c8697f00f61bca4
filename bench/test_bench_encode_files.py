"""Tokenizing a dataset to a flat uint16 file: ``cybpe.encode_files`` vs the loop people write
with tiktoken or HF tokenizers (read each document, encode, append <|endoftext|>, write).

The dataset: the training corpus cut into ~100 documents of ~200 KB in a temporary folder
(about 20 MB; ~3 MB of UDHR samples without $CYBPE_SHARED). GPT-2's vocabulary (ids < 65536).

python -m pytest bench/test_bench_encode_files.py --benchmark-group-by=group --benchmark-columns=min,median
"""

from __future__ import annotations

import numpy as np
import pytest

import cybpe
from bench_support import REPO, shared_path, training_text

LIBS = ["cybpe", "cybpe-1thread", "tiktoken-loop", "tiktoken-batch", "hf-batch"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dataset")
    if shared_path() is None:
        text = "".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "cybpe" / "data" / "udhr").glob("*.txt"))) * 3
    else:
        text = training_text(20)
    paths, size, start = [], 200_000, 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        path = folder / f"doc{len(paths):04d}.txt"
        path.write_text(text[start:end], encoding="utf-8")
        paths.append(path)
        start = end
    return paths


@pytest.fixture(scope="module")
def gpt2():
    shared = shared_path()
    if shared is None:
        pytest.skip("needs $CYBPE_SHARED/vocab/gpt2")
    return cybpe.Tokenizer.from_gpt2(shared / "vocab" / "gpt2" / "encoder.json", shared / "vocab" / "gpt2" / "vocab.bpe")


def tiktoken_encoding(tok):
    tiktoken = pytest.importorskip("tiktoken")
    return tiktoken.Encoding("gpt2", pat_str=tok.pretokenizer.pattern, special_tokens=tok.special_tokens,
                             mergeable_ranks={b: i for i, b in enumerate(tok.vocab.tokens)})


@pytest.mark.parametrize("lib", LIBS)
def test_encode_dataset(benchmark, lib, dataset, gpt2, tmp_path):
    benchmark.group = "encode dataset to uint16"
    out = tmp_path / "out.bin"
    eot = gpt2.special_tokens["<|endoftext|>"]
    if lib.startswith("cybpe"):
        workers = 1 if lib == "cybpe-1thread" else 2
        run = lambda: cybpe.encode_files(gpt2, dataset, out, dtype="uint16", eot=True, workers=workers)
    elif lib.startswith("tiktoken"):
        enc = tiktoken_encoding(gpt2)

        def run():
            with open(out, "wb") as f:
                if lib == "tiktoken-loop":
                    for p in dataset:
                        ids = enc.encode_ordinary(p.read_text(encoding="utf-8")) + [eot]
                        f.write(np.array(ids, dtype=np.uint16).tobytes())
                else:
                    texts = [p.read_text(encoding="utf-8") for p in dataset]
                    for ids in enc.encode_ordinary_batch(texts, num_threads=2):
                        f.write(np.array(ids + [eot], dtype=np.uint16).tobytes())
    else:
        tokenizers = pytest.importorskip("tokenizers")
        hf_path = tmp_path / "tokenizer.json"
        gpt2.to_hf(hf_path)
        hf = tokenizers.Tokenizer.from_file(str(hf_path))

        def run():
            texts = [p.read_text(encoding="utf-8") for p in dataset]
            with open(out, "wb") as f:
                for e in hf.encode_batch_fast(texts, add_special_tokens=False):
                    f.write(np.array(e.ids + [eot], dtype=np.uint16).tobytes())
    benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=0)
    want = []
    for p in dataset[:3]:
        want += gpt2.encode(p.read_text(encoding="utf-8")) + [eot]
    assert np.fromfile(out, dtype="<u2")[:len(want)].tolist() == want
