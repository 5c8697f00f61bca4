"""A patched transformers tokenizer shared by 8 threads, sent to worker processes by pickle
(``multiprocessing``) and by ``datasets.map(num_proc=2)``: every result equals the
single-threaded, unpatched one (issue 43, items 2 and 4)."""

from __future__ import annotations

import multiprocessing
import pickle
import threading

import pytest

import cybpe
from cybpe.compat.hf_backend import CybpeBackend
from hfpatch_support import HOSTILE, eval_docs, folder_path, load

pytest.importorskip("transformers", reason="transformers is in the test extra")


@pytest.fixture(autouse=True)
def _unpatched_after():
    yield
    cybpe.unpatch_transformers()


@pytest.fixture(scope="module", params=["trained", "llama3"])
def tok(request, tmp_path_factory):
    folder = folder_path(request.param, tmp_path_factory.mktemp("folders"))
    if folder is None:
        pytest.skip("the shared vocabularies are absent (set CYBPE_SHARED)")
    return load(folder)


@pytest.fixture(scope="module")
def texts():
    return HOSTILE + [d[i:i + 500] for d in eval_docs(3, 3000) for i in range(0, len(d), 500)]


#: Every call uses the same settings: transformers sets truncation and padding on the shared
#: Rust tokenizer before each call, so threads asking for different settings race on them, on
#: HF's engine as on cybpe's (transformers 4.x loses such a race visibly).
SETTINGS = {"padding": True, "truncation": True, "max_length": 40}


def _calls(tok, texts):
    """What each thread (or worker) computes."""
    out = [tok(t, **SETTINGS)["input_ids"] for t in texts]
    batch = tok(texts, return_offsets_mapping=True, **SETTINGS)
    out.append({k: batch[k] for k in batch})
    out.append([batch.tokens(i) for i in range(len(texts))])
    out.append([tok.decode(ids, skip_special_tokens=True) for ids in out[:len(texts)]])
    return out


def test_eight_threads_share_one_tokenizer(tok, texts):
    expected = _calls(tok, texts)  # unpatched, one thread
    with cybpe.transformers_patched():
        assert isinstance(tok._tokenizer, CybpeBackend) and tok._tokenizer.accelerated
        results: list = [None] * 8
        errors: list = []
        start = threading.Barrier(8)

        def work(k: int) -> None:
            try:
                start.wait()
                for _ in range(3):
                    results[k] = _calls(tok, texts)
                    assert results[k] == expected
            except BaseException as exc:  # reported below, with the thread's number
                errors.append((k, exc))
        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors[:1]
    assert all(r == expected for r in results)


def _worker(payload: bytes) -> bytes:
    """In a worker process: unpickle the tokenizer, patch, encode."""
    tok, texts = pickle.loads(payload)
    cybpe.patch_transformers()
    try:
        assert isinstance(tok._tokenizer, CybpeBackend)
        return pickle.dumps(_calls(tok, texts))
    finally:
        cybpe.unpatch_transformers()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pickled_to_worker_processes(tok, texts, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    expected = _calls(tok, texts)
    with cybpe.transformers_patched():
        payload = pickle.dumps((tok, texts))
        ctx = multiprocessing.get_context(method)
        with ctx.Pool(2) as pool:
            got = [pickle.loads(r) for r in pool.map(_worker, [payload, payload])]
    assert got == [expected, expected]


def test_datasets_map_num_proc_2(tok, texts, tmp_path):
    datasets = pytest.importorskip("datasets", reason="datasets is not installed (it needs no torch)")
    rows = texts * 3
    expected = [tok(t)["input_ids"] for t in rows]
    with cybpe.transformers_patched():
        ds = datasets.Dataset.from_dict({"text": rows})

        def encode(batch):
            return tok(batch["text"], return_offsets_mapping=True)
        mapped = ds.map(encode, batched=True, batch_size=7, num_proc=2,
                        cache_file_name=str(tmp_path / "mapped.arrow"))
        assert mapped["input_ids"] == expected
        unpatched_offsets = None
    cybpe.unpatch_transformers()
    unpatched_offsets = [tok(t, return_offsets_mapping=True)["offset_mapping"] for t in rows]
    assert [[tuple(o) for o in row] for row in mapped["offset_mapping"]] == \
        [[tuple(o) for o in row] for row in unpatched_offsets]
