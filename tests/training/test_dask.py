"""cybpe.dask on a real two-process LocalCluster: counts equal the single-process ones, the
merges are identical, counts travel as pickle-5 buffers, and dask.sizeof sees the C memory."""

from __future__ import annotations

import gzip
import lzma
import pickle

import pytest

import cybpe
import cybpe.dask

dask = pytest.importorskip("dask")  # in the test extra; the skip only protects a bare install
distributed = pytest.importorskip("distributed")
import dask.bag as db  # noqa: E402
from dask.sizeof import sizeof  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  memory_limit="1GiB") as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def corpus(shared_dir, tmp_path_factory):
    """~6 MB of the training corpus: one plain file (cut into shards) and one gzip file."""
    with lzma.open(shared_dir / "corpora" / "train" / "mixed-train.txt.xz", "rb") as f:
        data = f.read(6 << 20)
    data = data[: data.rindex(b"\n\n") + 2]
    half = data.index(b"\n\n", len(data) // 2) + 2
    folder = tmp_path_factory.mktemp("dask")
    (folder / "a.txt").write_bytes(data[:half])
    (folder / "b.txt.gz").write_bytes(gzip.compress(data[half:], 1))
    return folder


def test_counts_and_merges_equal_the_single_process_ones(client, corpus):
    paths = cybpe.files(corpus)
    local = cybpe.count(paths)
    distributed_counts = cybpe.dask.count(paths, client=client, n_shards=6, split_every=2)
    assert distributed_counts == local
    tok = cybpe.dask.train(corpus, 1000, client=client)  # a folder, shards from the default
    assert tok.vocab.merges == cybpe.train(local, 1000).vocab.merges
    assert len(client.scheduler_info()["workers"]) == 2


def test_a_bag_of_texts(client):
    texts = [f"Line {i}: naïve café {i * 13} ünïcode\n" for i in range(3000)]
    bag = db.from_sequence(texts, npartitions=7)
    assert cybpe.dask.count(bag, "o200k", client=client) == cybpe.count(texts, "o200k")
    with dask.config.set(scheduler="sync"):  # no client: Dask's current scheduler
        assert cybpe.dask.count(bag, "o200k") == cybpe.count(texts, "o200k")


def _worker_sizeof(counts):
    return sizeof(counts)


def test_counts_travel_as_buffers_and_dask_knows_their_size(client):
    counts = cybpe.count([" " + "".join(chr(97 + (i >> k) % 26) for k in (0, 5, 10)) for i in range(20000)])
    frames: list = []
    pickle.dumps(counts, protocol=5, buffer_callback=frames.append)
    assert len(frames) == 3
    assert sizeof(counts) >= counts.nbytes > 100_000
    header, payload = distributed.protocol.serialize(counts)
    assert distributed.protocol.deserialize(header, payload) == counts
    assert sum(memoryview(f).nbytes for f in payload) >= 8 * len(counts)
    # The workers (fresh processes that never imported cybpe.dask) know the size too.
    future = client.scatter(counts)
    assert client.submit(_worker_sizeof, future).result() >= 16 * len(counts) + counts.table.arena_bytes


def test_default_shards_one_per_worker_thread_and_split_every_checked(client, corpus):
    paths = cybpe.files(corpus / "a.txt")
    assert cybpe.dask._n_threads(client) == 2
    # more partial counts than split_every: the workers add them in a tree, the client the rest
    assert cybpe.dask.count(paths, client=client, n_shards=7, split_every=3) == cybpe.count(paths)
    with pytest.raises(cybpe.errors.InvalidParameterError, match="split_every"):
        cybpe.dask.count(paths, client=client, split_every=1)


def test_pickled_counts_are_a_snapshot_and_copy_keeps_them(corpus):
    import copy

    counts = cybpe.count(cybpe.files(corpus / "a.txt"))
    state = counts.__getstate__()
    counts.update("a text counted after the snapshot")  # the state was taken before
    assert pickle.loads(pickle.dumps(counts, protocol=4)) == counts
    restored = cybpe.ChunkCounts.__new__(cybpe.ChunkCounts)
    restored.__setstate__(state)
    assert restored.total < counts.total and len(restored) > 1000
    assert copy.copy(counts) == counts and copy.deepcopy(counts) == counts


def test_many_files_make_one_task_per_worker_thread(client, corpus, tmp_path):
    data = (corpus / "a.txt").read_bytes()
    cuts = [0] + [data.index(b"\n\n", len(data) * k // 5) + 2 for k in (1, 2, 3, 4)] + [len(data)]
    for k, (a, b) in enumerate(zip(cuts, cuts[1:])):
        (tmp_path / f"part-{k}.txt").write_bytes(data[a:b])
    paths = cybpe.files(tmp_path)
    assert len(paths) == 5 and len(cybpe.shards(paths, 2)) == 5  # at least one shard per file
    template = cybpe.ChunkCounts("cl100k")
    assert len(cybpe.dask._partials(template, paths, client, None, "strict")) == 2
    assert len(cybpe.dask._partials(template, paths, client, 8, "strict")) >= 5
    assert cybpe.dask.count(paths, client=client) == cybpe.count(paths)


def test_groups_are_consecutive_and_balanced_by_bytes():
    from cybpe.training.shards import group_shards as _groups

    pieces = [cybpe.Shard("f", a, a + size) for a, size in zip(range(0, 1000, 100), [100] * 10)]
    assert [len(g) for g in _groups(pieces, 3)] == [3, 4, 3]
    assert [p for g in _groups(pieces, 4) for p in g] == pieces
    assert _groups(pieces[:2], 4) == [[pieces[0]], [pieces[1]]]
    uneven = [cybpe.Shard("f", 0, 900), cybpe.Shard("f", 900, 950), cybpe.Shard("f", 950, 1000)]
    assert _groups(uneven, 2) == [[uneven[0]], uneven[1:]]
