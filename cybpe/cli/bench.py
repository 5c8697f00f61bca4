"""``cybpe bench``: argument handling around :mod:`cybpe.report.variants` (which does the measuring)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cybpe.cli.common import CliError, load_tokenizer, show_progress
from cybpe.report import variants as report_mod

EPILOG = """\
texts (default): $CYBPE_SHARED/corpora/eval/parallel-ntrex/<lang>.txt when present (CYBPE_SHARED,
  else ../shared from the current directory or next to the repository), else the UDHR sample
  that ships with cybpe (cybpe/data/udhr); the language is the file name without .txt.
words: on parallel texts every language is divided by the whitespace words of the reference
  (English) text, so "per word" means "per English word of the same content" and works for
  scripts without spaces (--words reference, the default when the reference is present);
  --words whitespace divides each text by its own whitespace words (spaced scripts only).
tokens: --tokenizer FILE (repeatable) counts that vocabulary's tokens for the variant it uses;
  --train-corpus FILE --vocab-size N trains one tokenizer per variant on the first --train-mb MB.
premium: tokens of a language / tokens of the reference on the same parallel text.
gini: Gini coefficient of tokens per word across the languages, per variant (0 = equal cost).
speed: split MB/s, regex path vs compiled scanner, on the same --speed-mb MB sample.

example:
  cybpe bench --train-corpus ../shared/corpora/train/mixed-train.txt.xz --train-mb 5 \\
      --vocab-size 8192 --markdown
"""


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.add_argument("--variants", default=None,
                   help="comma-separated pre-tokenizers (default: every registered one except 'regex')")
    p.add_argument("--texts", nargs="+", default=None, metavar="FILE",
                   help="per-language texts, named <lang>.txt (default: see below)")
    p.add_argument("--languages", default=None, help="comma-separated subset of the languages")
    p.add_argument("-t", "--tokenizer", action="append", default=[], metavar="FILE",
                   help="a vocabulary to apply (repeatable; one per pre-tokenizer)")
    p.add_argument("--train-corpus", default=None, metavar="FILE", help="train one tokenizer per variant on it (.xz ok)")
    p.add_argument("--train-mb", type=float, default=5.0, help="megabytes of the training corpus to use (default 5)")
    p.add_argument("--vocab-size", type=int, default=None, help="vocabulary size for --train-corpus")
    p.add_argument("--workers", type=int, default=None, help="processes counting the training corpus")
    p.add_argument("--reference", default="en", help="the reference language for premiums and words (default en)")
    p.add_argument("--words", choices=["reference", "whitespace"], default=None, help="word basis (see below)")
    p.add_argument("--speed-mb", type=float, default=1.0, help="size of the throughput sample (default 1 MB)")
    p.add_argument("--metric", action="append", default=None, choices=report_mod.METRICS,
                   help="table(s) to print (default: pieces_per_word, tokens_per_word, premium)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the full report as JSON")
    out.add_argument("--markdown", action="store_true", help="print markdown tables")
    p.add_argument("--plot", default=None, metavar="FILE.png", help="grouped bars of the first metric (needs matplotlib)")
    p.add_argument("--progress", action="store_true", help="progress on stderr even when it is not a terminal")


def _text_paths(args) -> dict[str, Path]:
    if args.texts:
        paths = {Path(p).name.removesuffix(".txt"): Path(p) for p in args.texts}
        if len(paths) != len(args.texts):
            raise report_mod.InvalidParameterError("two --texts files have the same language name")
    else:
        paths = report_mod.default_text_paths()
        if not paths:
            raise report_mod.InvalidParameterError(
                "no texts found (no NTREX under $CYBPE_SHARED or ../shared, no UDHR sample in the package); give --texts")
    if args.languages:
        wanted = [lang.strip() for lang in args.languages.split(",") if lang.strip()]
        missing = [lang for lang in wanted if lang not in paths]
        if missing:
            raise report_mod.InvalidParameterError(
                f"no text for language(s) {', '.join(missing)}; available: {', '.join(paths)}")
        paths = {lang: paths[lang] for lang in wanted}
    for path in paths.values():
        if not path.is_file():
            raise report_mod.InvalidParameterError(f"{path}: no such file")
    return paths


def run_bench(args) -> int:
    from cybpe.training.progress import Progress
    from cybpe.pretokenize.registry import get_pretokenizer

    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CliError("--plot needs matplotlib: pip install 'cybpe[plot]'") from None
    if args.train_corpus and args.tokenizer:
        raise CliError("give either --tokenizer or --train-corpus, not both")
    if bool(args.train_corpus) != (args.vocab_size is not None):
        raise CliError("--train-corpus and --vocab-size go together")
    if args.train_corpus and not Path(args.train_corpus).is_file():
        raise CliError(f"{args.train_corpus}: no such file")
    variants = ([v.strip() for v in args.variants.split(",") if v.strip()] if args.variants
                else report_mod.default_variants())
    for name in variants:
        get_pretokenizer(name)  # unknown names fail now, with suggestions
    paths = _text_paths(args)
    texts = {lang: report_mod.read_text(p) for lang, p in paths.items()}

    tokenizers = {}
    for path in args.tokenizer:
        tok = load_tokenizer(path)
        tok.name = tok.name or Path(path).name
        variant = tok.pretokenizer.name
        if variant in tokenizers:
            raise CliError(f"two --tokenizer files use the pre-tokenizer {variant!r}; give one per pre-tokenizer")
        tokenizers[variant] = tok
        if variant not in variants:
            variants.append(variant)

    n_steps = len(variants) * (len(texts) + 1) + (len(variants) if args.train_corpus else 0)
    info: dict = {"text_files": {lang: str(p) for lang, p in paths.items()}}
    started = time.perf_counter()
    with Progress(show_progress(args), "bench", unit="steps", total=n_steps) as bar:
        step = lambda: bar.advance(1)  # noqa: E731
        if args.train_corpus:
            corpus = report_mod.read_prefix(Path(args.train_corpus), args.train_mb)
            tokenizers = report_mod.train_per_variant(corpus, variants, args.vocab_size,
                                                      workers=args.workers, step=step)
            for name, tok in tokenizers.items():
                tok.name = f"{name}-{args.vocab_size}"
            info["training"] = {"corpus": str(args.train_corpus), "chars": len(corpus),
                                "bytes": len(corpus.encode("utf-8")), "vocab_size": args.vocab_size}
        report = report_mod.build_report(texts, variants, tokenizers, reference=args.reference,
                                         word_basis=args.words, speed_mb=args.speed_mb, step=step, info=info)
    report["seconds"] = round(time.perf_counter() - started, 2)

    if args.plot:
        metric = (args.metric or [m for m in ("tokens_per_word", "pieces_per_word")
                                  if m in report_mod.available_metrics(report)])[0]
        report_mod.plot(report, metric, args.plot)
        print(f"wrote {args.plot} ({metric})", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        sys.stdout.write(report_mod.render(report, args.metric, markdown=args.markdown))
    return 0
