"""Count a corpus on a Dask cluster, train on the client, encode datasets into token files on
the cluster (optional extra: ``pip install 'cybpe[dask]'``).

Encoding (:func:`encode_files`, :func:`encode_parquet`): the client cuts the inputs into byte
ranges (the same safe cuts as counting) in one consecutive group per task; the tokenizer goes
to each worker once (``scatter(broadcast=True)``); each task writes its own part file
atomically and returns a small record; the client writes the manifest last. The output
format: :mod:`cybpe.io.token_shards`.

What runs where:

* the client expands globs and cuts the files into exact shards (:func:`cybpe.shards`: byte
  ranges cut where the chunks cannot change; a compressed file is one shard);
* the shards go in one group per worker thread (consecutive, about equal bytes); each task
  counts its group (or one partition of a ``dask.bag`` of texts) into one
  :class:`cybpe.ChunkCounts` with the compiled counter;
* while more than ``split_every`` partial counts remain, the workers add them ``split_every``
  at a time; the client adds the last ones, in order; counts travel as three flat arrays,
  out-of-band pickle-5 buffers, never as a Python dict;
* the client trains from the sum (:func:`train`), so the merges are the ones a single
  process makes from the same corpus.

Workers must be able to import cybpe (install it on them). URLs need fsspec and the scheme's
backend on the workers too. Without a ``client``, Dask's current scheduler is used (the
default ``distributed`` Client when one exists, else local processes).

Thread safety: the functions share no state; one client may run several counts at once.

Why one task per worker thread: each task counts a group of shards into one table, so there is
one partial count per thread to gather and add; the client adds them in place (the task keys
are unique to the call, so each result is its own), pickling snapshots the arrays without
hashing, results are fetched as each task ends, and the worker counts under
:func:`~cybpe.training.allocator.roomy_malloc` (Dask's nanny environment otherwise makes every
large buffer a fresh mmap). What is left of the gap to a local count is mostly Dask's own CPU.
The cost: one task per thread cannot rebalance when one worker is slower (a busier machine);
pass ``n_shards`` (more, smaller tasks, then more additions) for uneven workers. The
measurements and the designs before this one: docs/history.md, "Counting under Dask".
"""

from __future__ import annotations

import functools
import os
from typing import Any, Iterable, Optional, Sequence

from cybpe.errors import InvalidParameterError
from cybpe.io.readers import is_url
from cybpe.training.allocator import roomy_malloc
from cybpe.training.corpus import count_corpus, counts_for, files
from cybpe.training.counts import ChunkCounts
from cybpe.training.shards import Shard, group_shards, shards

SHARDS_PER_WORKER = 1  # shards per worker thread by default (the module docstring says why)


def _count_partition(spec: dict, special_tokens: tuple, errors: str, items: Iterable[Any]) -> ChunkCounts:
    """Worker side: the counts of one partition (texts, or Shards of files)."""
    counts = counts_for(spec, special_tokens)
    with roomy_malloc():
        return count_corpus(counts, items, errors=errors)


def _add_all(parts: Sequence[ChunkCounts]) -> ChunkCounts:
    """Worker side: the sum of some partial counts (the inputs are left unchanged)."""
    parts = list(parts)
    total = parts[0].copy()
    for part in parts[1:]:
        total += part
    return total


def _n_threads(client: Any) -> int:
    """Worker threads of the cluster (this machine's cores without a client)."""
    if client is not None:
        try:
            workers = client.scheduler_info()["workers"].values()
            return max(1, sum(int(w.get("nthreads", 1)) for w in workers))
        except Exception:  # an unusual client: fall back to this machine's cores
            pass
    return os.cpu_count() or 1


def _is_bag(corpus: Any) -> bool:
    try:
        import dask.bag as db
    except ImportError:
        return False
    return isinstance(corpus, db.Bag)


def _partials(template: ChunkCounts, corpus: Any, client: Any, n_shards: Optional[int],
              errors: str) -> list:
    """One delayed count per bag partition or shard (keys unique to this call: ``pure=False``)."""
    from dask import delayed

    spec, specials = template.pretokenizer.spec(), template.special_tokens
    count_one = delayed(functools.partial(_count_partition, spec, specials, errors), pure=False)
    if _is_bag(corpus):
        return [count_one(part) for part in corpus.to_delayed()]
    items = [corpus] if isinstance(corpus, (str, os.PathLike, Shard)) else list(corpus)
    whole = [i for i in items if not isinstance(i, Shard)]
    sources = files(*whole) if whole else []
    given = [i for i in items if isinstance(i, Shard)]
    n = n_shards or SHARDS_PER_WORKER * _n_threads(client)
    cut = shards([s.source if isinstance(s, Shard) else s for s in sources], n, template.pretokenizer,
                 specials) if sources else []
    return [count_one(group) for group in group_shards(given + cut, n)]


def _gather_as_completed(futures: list) -> list:
    """The futures' results in their order, each fetched as soon as its task ends (so the
    first transfer overlaps the last task, instead of all transfers waiting for it)."""
    from distributed import as_completed

    results: list = [None] * len(futures)
    position = {future.key: i for i, future in enumerate(futures)}
    for future in as_completed(futures):
        results[position[future.key]] = future.result()
    return results


def count(
    corpus: Any,
    pretokenizer: Any = "cl100k",
    special_tokens: Sequence[str] = (),
    *,
    client: Any = None,
    n_shards: Optional[int] = None,
    split_every: int = 8,
    errors: str = "strict",
    **pretokenizer_params: Any,
) -> ChunkCounts:
    """Count ``corpus`` on the cluster: a ``dask.bag.Bag`` of ``str`` texts, or a path, URL or
    glob (or a list of them, or of :class:`cybpe.Shard`). Returns the summed ChunkCounts on the
    client, equal to ``cybpe.count`` of the same corpus. ``n_shards`` defaults to one per
    worker thread; ``split_every`` is the fan-in of the tree of additions (the workers add
    ``split_every`` partial counts at a time until at most that many remain, which the client
    adds in order)."""
    try:
        import dask
    except ImportError:
        raise ImportError("cybpe.dask needs Dask: pip install 'cybpe[dask]'") from None
    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        raise InvalidParameterError(f"split_every must be an integer >= 2, got {split_every!r}")
    template = ChunkCounts(pretokenizer, special_tokens, **pretokenizer_params)
    partials = _partials(template, corpus, client, n_shards, errors)
    if not partials:
        return template
    add_all = dask.delayed(_add_all, pure=False)
    while len(partials) > split_every:
        partials = [add_all(partials[i:i + split_every]) for i in range(0, len(partials), split_every)]
    if client is not None:
        results = _gather_as_completed(client.compute(partials))
    else:
        results = dask.compute(*partials)
    for result in results:
        if not isinstance(result, ChunkCounts):
            raise TypeError(f"the cluster returned {type(result).__name__}, not ChunkCounts")
    # The client adds the last few in place: each is this call's own copy (unique keys), so
    # the sum costs no copy, and no worker adds, pickles and sends the whole sum once more.
    total = results[0]
    for result in results[1:]:
        total += result
    return total


def train(
    corpus: Any,
    vocab_size: int,
    pretokenizer: Any = "cl100k",
    special_tokens: Sequence[str] = (),
    *,
    client: Any = None,
    n_shards: Optional[int] = None,
    split_every: int = 8,
    errors: str = "strict",
    pretokenizer_params: Optional[dict] = None,
    **train_options: Any,
) -> Any:
    """Count on the cluster (:func:`count`), then train on the client (:func:`cybpe.train`
    options: ``min_frequency``, ``tie_break``, ``progress``...)."""
    from cybpe.api.train import train as train_from

    counts = count(corpus, pretokenizer, special_tokens, client=client, n_shards=n_shards,
                   split_every=split_every, errors=errors, **(pretokenizer_params or {}))
    return train_from(counts, vocab_size, special_tokens=special_tokens, **train_options)


# -- encoding a dataset into token files ------------------------------------------------------


def _encode_task(tokenizer: Any, task: dict) -> dict:
    """Worker side: one token shard, under roomy_malloc (as counting is: the nanny's
    ``MALLOC_TRIM_THRESHOLD_`` made every block's id and piece buffers fresh mmaps, and the
    encode 15-30% slower)."""
    from cybpe.io import token_shards

    with roomy_malloc():
        return token_shards.encode_task(tokenizer, task)


def _parquet_task(tokenizer: Any, task: dict) -> dict:
    """Worker side: one Parquet shard, under roomy_malloc (see _encode_task)."""
    from cybpe.io import token_shards

    with roomy_malloc():
        return token_shards.parquet_task(tokenizer, task)


def _run_tasks(fn: Any, tokenizer: Any, tasks: list, client: Any) -> list:
    """``fn(tokenizer, task)`` for every task on the cluster, results in task order. The
    tokenizer goes to each worker once (``scatter(broadcast=True)``), not once per task; a task
    whose worker dies is retried (its outputs are written atomically, so a retry is clean)."""
    if not tasks:
        return []
    if client is not None:
        shipped = client.scatter(tokenizer, broadcast=True, hash=False)
        futures = [client.submit(fn, shipped, task, pure=False, retries=2) for task in tasks]
        return _gather_as_completed(futures)
    import dask

    shipped = dask.delayed(tokenizer, pure=False)
    return list(dask.compute(*[dask.delayed(fn, pure=False)(shipped, task) for task in tasks]))


def encode_files(
    paths: Any,
    tokenizer: Any,
    output_dir: Any,
    *,
    dtype: str = "uint32",
    eot: Any = None,
    client: Any = None,
    n_tasks: Optional[int] = None,
    allowed_special: Any = frozenset(),
    disallowed_special: Any = "all",
    errors: str = "strict",
    megatron: bool = False,
    block_chars: Optional[int] = None,
) -> dict:
    """Encode files (paths, URLs, globs) on the cluster into ``output_dir``: one flat id file per
    task (``part-NNNNN.bin``, names in input order) and, written last, the manifest
    ``index.json`` (documents' offsets and sizes, the tokenizer's fingerprint, dtype, counts);
    with ``megatron``, a Megatron-LM ``.idx`` beside each part. The parts concatenated in name
    order are :func:`cybpe.encode_files`' output for the same arguments, token for token. A
    call run again after a failure redoes only the parts that are missing or differ. Returns
    the manifest. The format: :mod:`cybpe.io.token_shards`."""
    from cybpe.api.encode_files import BLOCK_CHARS, eot_id, output_dtype
    from cybpe.api.tokenizer import Tokenizer
    from cybpe.errors import ParameterTypeError
    from cybpe.io import token_shards

    if not isinstance(tokenizer, Tokenizer):
        raise ParameterTypeError(f"encode_files() takes a cybpe.Tokenizer, not {type(tokenizer).__name__}")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    output_dtype(tokenizer, dtype)
    end_id = eot_id(tokenizer, eot)
    folder = os.fspath(output_dir)
    os.makedirs(folder, exist_ok=True)
    sources = token_shards.sources_of(paths)
    n = n_tasks or SHARDS_PER_WORKER * _n_threads(client)
    tasks = token_shards.plan(tokenizer, sources, n, folder, dtype=dtype, eot=end_id,
                              allowed_special=allowed_special, disallowed_special=disallowed_special,
                              errors=errors, megatron=bool(megatron), block_chars=block_chars or BLOCK_CHARS)
    records = _run_tasks(_encode_task, tokenizer, tasks, client)
    return token_shards.finish(tokenizer, folder, tasks, records, sources, dtype=dtype, eot=end_id)


def encode_parquet(
    paths: Any,
    tokenizer: Any,
    output_dir: Any,
    *,
    column: str = "text",
    ids_column: str = "ids",
    dtype: str = "uint32",
    client: Any = None,
    errors: str = "strict",
    batch_rows: int = 8192,
) -> dict:
    """Encode the ``column`` of Parquet files on the cluster (one task per file) into
    ``output_dir``: ``part-NNNNN.parquet`` (input order) with every source column kept and an
    ``ids_column`` list column (:meth:`cybpe.Tokenizer.encode_arrow`: ordinary text, nulls
    stay null), then the manifest ``index.json``. Returns the manifest."""
    from cybpe.api.tokenizer import Tokenizer
    from cybpe.encode.arrow import id_dtype
    from cybpe.errors import ParameterTypeError
    from cybpe.io import token_shards

    if not isinstance(tokenizer, Tokenizer):
        raise ParameterTypeError(f"encode_parquet() takes a cybpe.Tokenizer, not {type(tokenizer).__name__}")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    id_dtype(tokenizer, dtype)
    folder = os.fspath(output_dir)
    os.makedirs(folder, exist_ok=True)
    sources = token_shards.sources_of(paths)
    tasks = token_shards.parquet_tasks(tokenizer, sources, folder, column=column, ids_column=ids_column,
                                       dtype=dtype, errors=errors, batch_rows=batch_rows)
    records = _run_tasks(_parquet_task, tokenizer, tasks, client)
    return token_shards.finish_parquet(tokenizer, folder, tasks, records, column=column,
                                       ids_column=ids_column, dtype=dtype)


def _sizeof_counts(counts: ChunkCounts) -> int:
    return int(counts.nbytes) + 256


def register_sizeof(sizeof: Any) -> None:
    """The ``dask.sizeof`` entry point: Dask's default (``sys.getsizeof``) does not see the
    compiled counter's memory, so spilling and memory limits would under-count it."""
    from cybpe.training.chunk_counter import ChunkCounter

    sizeof.register(ChunkCounts)(_sizeof_counts)
    sizeof.register(ChunkCounter)(lambda table: int(table.nbytes) + 64)



def _register_now() -> None:
    """Register at import too: the entry point does not run when dask.sizeof was imported
    before cybpe was installed into the environment, or when a plugin failed to load."""
    try:
        from dask.sizeof import sizeof
    except ImportError:  # no Dask: count() says how to install it
        return
    register_sizeof(sizeof)


_register_now()
