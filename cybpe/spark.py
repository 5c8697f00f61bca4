"""Count, train and encode on Spark (optional extra: ``pip install 'cybpe[spark]'``).

What runs where:

* :func:`count` of a DataFrame: each partition's text column arrives on an executor as Arrow
  batches (``mapInArrow``) and is counted into one :class:`cybpe.ChunkCounts` with the compiled
  counter; the partial counts are added on the executors in a tree (``treeReduce``) and the
  last sum comes to the driver. Of files (paths, globs): the driver cuts them into byte ranges
  where the chunks cannot change (:func:`cybpe.shards`), the executors read and count their
  ranges (the paths must be readable from the executors: a shared filesystem, or URLs).
  Either way the counts equal ``cybpe.count`` of the same texts, so :func:`train` (counting
  here, training on the driver) makes the merges of one process.
* :func:`encode` of a DataFrame: a new ``ids`` array column, computed per Arrow batch by
  :meth:`cybpe.Tokenizer.encode_arrow` from the batch's UTF-8 buffer (no Python object per
  row); the other columns pass through unchanged. Spark has no unsigned integers: ids are
  ``int`` (``dtype="int32"``, default) or ``bigint`` (``"int64"``).
* :func:`encode_files`: :func:`cybpe.dask.encode_files`' output (token parts and a manifest,
  :mod:`cybpe.io.token_shards`) with Spark tasks instead of Dask's.

The tokenizer is shipped as a broadcast variable: each executor's Python worker loads it once
and keeps it between tasks (and an unpickled tokenizer reuses an encoder the process already
has, :mod:`cybpe.encode.shared_encoders`). Executors must be able to import cybpe.

``spark`` is the session (default: the active one, else ``SparkSession.builder.getOrCreate()``).
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Iterator, Optional, Sequence

from cybpe.errors import InvalidParameterError, ParameterTypeError
from cybpe.training.counts import ChunkCounts

#: Spark's SQL type for each ``dtype`` that ``encode`` writes.
SPARK_ID_TYPES = {"int32": "IntegerType", "int64": "LongType"}


def _session(spark: Any) -> Any:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ImportError("cybpe.spark needs pyspark: pip install 'cybpe[spark]'") from None
    if spark is not None:
        return spark
    return SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()


def _is_dataframe(obj: Any) -> bool:
    try:
        from pyspark.sql import DataFrame
    except ImportError:
        return False
    return isinstance(obj, DataFrame)


def _add(a: ChunkCounts, b: ChunkCounts) -> ChunkCounts:
    a += b
    return a


def _count_batches(spec: dict, specials: tuple, column: str, batches: Iterator[Any]) -> Iterator[Any]:
    """Executor side (mapInArrow): one row holding the pickled counts of the partition."""
    import pyarrow as pa

    from cybpe.training.allocator import roomy_malloc
    from cybpe.training.corpus import counts_for

    counts = counts_for(spec, specials)
    with roomy_malloc():
        for batch in batches:
            texts = [t for t in batch.column(batch.schema.get_field_index(column)).to_pylist() if t is not None]
            if texts:
                counts.update(texts)
    yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(counts, protocol=5)], pa.binary())], names=["counts"])


def _count_shards(spec: dict, specials: tuple, errors: str, group: list) -> ChunkCounts:
    from cybpe.training.allocator import roomy_malloc
    from cybpe.training.corpus import count_corpus, counts_for

    counts = counts_for(spec, specials)
    with roomy_malloc():
        return count_corpus(counts, group, errors=errors)


def count(
    df_or_paths: Any,
    pretokenizer: Any = "cl100k",
    special_tokens: Sequence[str] = (),
    *,
    column: str = "text",
    spark: Any = None,
    n_shards: Optional[int] = None,
    depth: int = 2,
    errors: str = "strict",
    **pretokenizer_params: Any,
) -> ChunkCounts:
    """The :class:`cybpe.ChunkCounts` of a DataFrame's ``column`` (null texts skipped) or of
    files (a path, glob or list of them), counted on the executors and added in a tree of
    ``depth`` levels (``treeReduce``). Equal to ``cybpe.count`` of the same texts or files."""
    from functools import partial

    session = _session(spark)
    template = ChunkCounts(pretokenizer, special_tokens, **pretokenizer_params)
    spec, specials = template.pretokenizer.spec(), template.special_tokens
    if _is_dataframe(df_or_paths):
        if column not in df_or_paths.columns:
            raise InvalidParameterError(f"the DataFrame has no column {column!r} (it has {', '.join(df_or_paths.columns)})")
        partials = (df_or_paths.select(column)
                    .mapInArrow(partial(_count_batches, spec, specials, column), "counts binary")
                    .rdd.map(lambda row: pickle.loads(row[0])))
        if partials.getNumPartitions() == 0:
            return template
    else:
        from cybpe.training.shards import group_shards
        from cybpe.training.corpus import files
        from cybpe.training.shards import Shard, shards

        items = [df_or_paths] if isinstance(df_or_paths, (str, os.PathLike, Shard)) else list(df_or_paths)
        given = [i for i in items if isinstance(i, Shard)]
        sources = files(*[i for i in items if not isinstance(i, Shard)]) if len(given) < len(items) else []
        n = n_shards or session.sparkContext.defaultParallelism
        cut = shards([s.source if isinstance(s, Shard) else s for s in sources], n, template.pretokenizer,
                     specials) if sources else []
        groups = group_shards(given + cut, n)
        if not groups:
            return template
        partials = (session.sparkContext.parallelize(groups, len(groups))
                    .map(partial(_count_shards, spec, specials, errors)))
    return partials.treeReduce(_add, depth=depth)


def train(
    df_or_paths: Any,
    vocab_size: int,
    pretokenizer: Any = "cl100k",
    special_tokens: Sequence[str] = (),
    *,
    column: str = "text",
    spark: Any = None,
    n_shards: Optional[int] = None,
    errors: str = "strict",
    pretokenizer_params: Optional[dict] = None,
    **train_options: Any,
) -> Any:
    """Count on Spark (:func:`count`), then train on the driver (:func:`cybpe.train` options):
    the merges one process makes from the same texts."""
    from cybpe.api.train import train as train_from

    counts = count(df_or_paths, pretokenizer, special_tokens, column=column, spark=spark,
                   n_shards=n_shards, errors=errors, **(pretokenizer_params or {}))
    return train_from(counts, vocab_size, special_tokens=special_tokens, **train_options)


def _encode_batches(shipped: Any, column: str, ids_column: str, dtype: str, errors: str,
                    batches: Iterator[Any]) -> Iterator[Any]:
    """Executor side (mapInArrow): each batch with its ids column appended."""
    import pyarrow as pa

    tokenizer = shipped.value  # the broadcast: loaded once per Python worker, kept between tasks
    list_type = pa.list_(pa.int32() if dtype == "int32" else pa.int64())
    for batch in batches:
        ids = tokenizer.encode_arrow(batch.column(batch.schema.get_field_index(column)), dtype=dtype,
                                     num_threads=1, errors=errors)
        if ids.type != list_type:  # a large_string column gives a large_list
            ids = ids.cast(list_type)
        yield pa.RecordBatch.from_arrays(list(batch.columns) + [ids], names=list(batch.schema.names) + [ids_column])


def encode(df: Any, column: str, tokenizer: Any, *, ids_column: str = "ids", dtype: str = "int32",
           errors: str = "strict", spark: Any = None) -> Any:
    """``df`` with a new ``ids_column`` (``array<int>``, or ``array<bigint>`` for ``dtype=
    "int64"``): :meth:`cybpe.Tokenizer.encode_ordinary` of ``column``, computed per Arrow batch
    with :meth:`~cybpe.Tokenizer.encode_arrow`; null texts give null arrays. Lazy, as any
    DataFrame transformation; the tokenizer is broadcast once."""
    from functools import partial

    from cybpe.api.tokenizer import Tokenizer
    from cybpe.encode.arrow import id_dtype

    session = _session(spark)
    if not isinstance(tokenizer, Tokenizer):
        raise ParameterTypeError(f"encode() takes a cybpe.Tokenizer, not {type(tokenizer).__name__}")
    if not _is_dataframe(df):
        raise ParameterTypeError(f"encode() takes a pyspark DataFrame, not {type(df).__name__}")
    if dtype not in SPARK_ID_TYPES:
        raise InvalidParameterError(f"dtype must be one of {', '.join(SPARK_ID_TYPES)} (Spark has no unsigned "
                                    f"integers), not {dtype!r}")
    id_dtype(tokenizer, dtype)
    if column not in df.columns:
        raise InvalidParameterError(f"the DataFrame has no column {column!r} (it has {', '.join(df.columns)})")
    if ids_column in df.columns:
        raise InvalidParameterError(f"the DataFrame already has a column {ids_column!r}")
    from pyspark.sql import types as T

    element = getattr(T, SPARK_ID_TYPES[dtype])()
    schema = T.StructType(list(df.schema.fields) + [T.StructField(ids_column, T.ArrayType(element, False), True)])
    shipped = session.sparkContext.broadcast(tokenizer)
    return df.mapInArrow(partial(_encode_batches, shipped, column, ids_column, dtype, errors), schema)


def _encode_task(shipped: Any, task: dict) -> dict:
    from cybpe.io.token_shards import encode_task

    return encode_task(shipped.value, task)


def encode_files(
    paths: Any,
    tokenizer: Any,
    output_dir: Any,
    *,
    dtype: str = "uint32",
    eot: Any = None,
    spark: Any = None,
    n_tasks: Optional[int] = None,
    allowed_special: Any = frozenset(),
    disallowed_special: Any = "all",
    errors: str = "strict",
    megatron: bool = False,
    block_chars: Optional[int] = None,
) -> dict:
    """:func:`cybpe.dask.encode_files` on Spark: token parts in ``output_dir`` (which the
    executors write: a shared filesystem), then the manifest; the parts concatenated in name
    order equal :func:`cybpe.encode_files`. Returns the manifest."""
    from functools import partial

    from cybpe.api.encode_files import BLOCK_CHARS, eot_id, output_dtype
    from cybpe.api.tokenizer import Tokenizer
    from cybpe.io import token_shards

    session = _session(spark)
    if not isinstance(tokenizer, Tokenizer):
        raise ParameterTypeError(f"encode_files() takes a cybpe.Tokenizer, not {type(tokenizer).__name__}")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    output_dtype(tokenizer, dtype)
    end_id = eot_id(tokenizer, eot)
    folder = os.path.abspath(os.fspath(output_dir))
    os.makedirs(folder, exist_ok=True)
    sources = token_shards.sources_of(paths)
    n = n_tasks or session.sparkContext.defaultParallelism
    tasks = token_shards.plan(tokenizer, sources, n, folder, dtype=dtype, eot=end_id,
                              allowed_special=allowed_special, disallowed_special=disallowed_special,
                              errors=errors, megatron=bool(megatron), block_chars=block_chars or BLOCK_CHARS)
    records: list = []
    if tasks:
        shipped = session.sparkContext.broadcast(tokenizer)
        records = session.sparkContext.parallelize(tasks, len(tasks)).map(partial(_encode_task, shipped)).collect()
    return token_shards.finish(tokenizer, folder, tasks, records, sources, dtype=dtype, eot=end_id)
