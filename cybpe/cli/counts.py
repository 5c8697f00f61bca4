"""``cybpe counts make|merge|show``: chunk-count files on the command line.

A sub-command group rather than a new ``count`` meaning: ``cybpe count`` already prints token
counts for a tokenizer, and scripts rely on it. ``cybpe train --counts FILE`` trains from a file.
"""

from __future__ import annotations

import sys
from typing import Any


def cmd_counts(args: Any) -> int:
    from cybpe.training.corpus import count, files
    from cybpe.training.counts import ChunkCounts

    if args.action in ("make", "merge") and not args.output:
        raise ValueError(f"counts {args.action} needs -o/--output")
    if args.action == "make":
        counts = count(files(*args.inputs), args.pretokenizer, args.special, workers=args.workers,
                       errors=args.errors, max_unique=args.max_unique)
        counts.save(args.output, compress=args.compress)
    elif args.action == "merge":
        counts = sum((ChunkCounts.load(p) for p in args.inputs), 0)  # type: ignore[arg-type]
        counts.save(args.output, compress=args.compress)
    else:
        counts = ChunkCounts.load(args.inputs[0])
        for chunk, n in counts.most_common(args.top):
            print(f"{n}\t{chunk!r}")
    exact = "exact" if counts.exact else (f"approximate, undercount <= {counts.max_undercount}"
                                           f", pair undercount <= {counts.max_pair_undercount}")
    print(f"{getattr(args, 'output', None) or args.inputs[0]}: {len(counts)} distinct chunks, "
          f"{counts.total} occurrences ({exact}), pre-tokenizer {counts.pretokenizer.name}", file=sys.stderr)
    return 0


def add_counts_parser(sub: Any) -> None:
    p = sub.add_parser("counts", help="make, merge or show chunk-count files (for training at scale)",
                       description="make: count files/globs/folders/URLs into a counts file; merge: add "
                                   "counts files; show: the most frequent chunks. Binary unless the "
                                   "output ends in .json.")
    p.add_argument("action", choices=["make", "merge", "show"])
    p.add_argument("inputs", nargs="+", help="corpus files, globs, folders or URLs (make); counts files")
    p.add_argument("-o", "--output", help="the counts file to write (make, merge)")
    p.add_argument("--pretokenizer", default="cl100k")
    p.add_argument("--special", action="append", default=[], metavar="TOKEN")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--errors", default="strict", help="for invalid UTF-8: strict, replace or ignore")
    p.add_argument("--max-unique", type=int, default=None, help="memory cap: distinct chunks kept (approximate)")
    p.add_argument("--compress", choices=["zstd", "gzip"], default=None)
    p.add_argument("--top", type=int, default=20, help="show: how many chunks")
    p.set_defaults(func=cmd_counts)
