"""Build the scale benchmarks' inputs in a temporary folder (never committed).

* ``build_corpus(folder, megabytes)``: a corpus of ``megabytes`` MB (10**6 bytes) assembled from
  the shared training corpus (``corpora/train/mixed-train.txt.xz``): its documents (separated by
  a blank line) are written in passes, each pass a fresh shuffle of all documents
  (``random.Random(seed + pass)``), until the size is reached; the last document that fits ends
  the corpus. Files of ``file_megabytes`` each (``corpus-000.txt``, ...), so that counting
  workers and shards have several files. Deterministic for one seed and source.
* ``distinct_words(n)``: text of ``n`` distinct 6-letter words (`` aaaaaa``, `` aaaaab``, ...,
  base 26), a newline after every 1000 words: the high-cardinality corpus (``n`` + 1 distinct
  chunks under the GPT-style pre-tokenizers).

Smoke mode (``BENCH_SCALE_SMOKE=1``) makes everything small; ``tests/training/test_scale_corpus.py``
runs this script in that mode so it cannot rot.

    python bench/scale_corpus.py OUT_FOLDER [--mb 1024] [--distinct 10000000]
"""

from __future__ import annotations

import argparse
import lzma
import os
import random
from pathlib import Path
from typing import Optional

SMOKE = os.environ.get("BENCH_SCALE_SMOKE") == "1"
CORPUS_MB = int(os.environ.get("BENCH_SCALE_MB", "4" if SMOKE else "1024"))
DISTINCT = int(os.environ.get("BENCH_SCALE_DISTINCT", "20000" if SMOKE else "10000000"))


def source_path(shared: Optional[Path] = None) -> Path:
    if shared is None:
        configured = os.environ.get("CYBPE_SHARED")
        shared = Path(configured) if configured else Path(__file__).resolve().parents[2] / "shared"
    return shared / "corpora" / "train" / "mixed-train.txt.xz"


def read_documents(source: Path, limit_bytes: Optional[int] = None) -> list[str]:
    """The documents of the training corpus (``limit_bytes``: only a prefix, for smoke runs)."""
    with lzma.open(source, "rt", encoding="utf-8") as f:
        text = f.read(limit_bytes) if limit_bytes else f.read()
    if limit_bytes:
        text = text[: text.rfind("\n\n") + 2]
    return [doc for doc in text.split("\n\n") if doc]


def build_corpus(folder: Path, megabytes: int = CORPUS_MB, *, seed: int = 0,
                 file_megabytes: int = 64, source: Optional[Path] = None) -> list[Path]:
    """Write the resampled corpus into ``folder``; returns its files in order."""
    folder.mkdir(parents=True, exist_ok=True)
    source = source or source_path()
    documents = [(doc + "\n\n").encode("utf-8")
                 for doc in read_documents(source, 8_000_000 if megabytes <= 8 else None)]
    target, per_file = megabytes * 1_000_000, file_megabytes * 1_000_000
    paths: list[Path] = []
    written, out, in_file = 0, None, 0
    try:
        for pass_number in range(1 << 30):
            order = list(range(len(documents)))
            random.Random(seed + pass_number).shuffle(order)
            for index in order:
                doc = documents[index]
                if written + len(doc) > target:
                    return paths
                if out is None or in_file >= per_file:
                    if out is not None:
                        out.close()
                    paths.append(folder / f"corpus-{len(paths):03d}.txt")
                    out, in_file = open(paths[-1], "wb"), 0
                out.write(doc)
                written += len(doc)
                in_file += len(doc)
    finally:
        if out is not None:
            out.close()
    return paths


def distinct_words(n: int, letters: int = 6) -> str:
    """``n`` distinct words of ``letters`` letters after a space; newline every 1000 words."""
    import numpy as np

    if n > 26 ** letters:
        raise ValueError(f"{letters} letters give only {26 ** letters} distinct words")
    numbers = np.arange(n, dtype=np.int64)
    columns = [np.full(n, ord(" "), np.uint8)]
    for power in range(letters - 1, -1, -1):
        columns.append(((numbers // 26 ** power) % 26 + ord("a")).astype(np.uint8))
    words = np.stack(columns, axis=1).tobytes().decode("ascii")
    width = 1000 * (letters + 1)
    return "\n".join(words[i:i + width] for i in range(0, len(words), width)) + "\n"


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--mb", type=int, default=CORPUS_MB)
    parser.add_argument("--distinct", type=int, default=DISTINCT)
    args = parser.parse_args(argv)
    paths = build_corpus(args.folder / "corpus", args.mb)
    words = args.folder / "distinct.txt"
    words.write_text(distinct_words(args.distinct), encoding="ascii")
    size = sum(p.stat().st_size for p in paths)
    print(f"{len(paths)} corpus files, {size} bytes in {args.folder / 'corpus'}; "
          f"{args.distinct} distinct words in {words}")


if __name__ == "__main__":
    main()
