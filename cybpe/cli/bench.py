"""``cybpe bench``: argument handling around :mod:`cybpe.report.variants` (which does the measuring)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path

from cybpe.cli.common import CliError, load_tokenizer, show_progress
from cybpe.report import variants as report_mod
from cybpe.report.metrics import definition_table

#: ``--real-vocabularies``: the real tokenizers in the shared folder's ``vocab/``, by the name a
#: reader knows them by (Qwen3's vocabulary uses the qwen2 pre-tokenizer but is Qwen3's).
REAL_VOCABULARIES = (("cl100k_base", "cl100k_base.tiktoken"), ("o200k_base", "o200k_base.tiktoken"),
                     ("Llama 3", "llama3/tokenizer.json"), ("Qwen3", "qwen3/tokenizer.json"),
                     ("GPT-4o", "gpt4o-hf/tokenizer.json"))

EPILOG = """\
texts (default): $CYBPE_SHARED/corpora/eval/parallel-ntrex/<lang>.txt when present (CYBPE_SHARED,
  else ../shared from the current directory or next to the repository), else the UDHR sample
  that ships with cybpe (cybpe/data/udhr); the language is the file name without .txt.
words: on parallel texts every language is divided by the whitespace words of the reference
  (English) text, so "per word" means "per English word of the same content" and works for
  scripts without spaces (--words reference, the default when the reference is present);
  --words whitespace divides each text by its own whitespace words (spaced scripts only).
tokens: --tokenizer FILE (repeatable) counts that vocabulary's tokens for the variant it uses;
  --train-corpus FILE --vocab-size N trains one tokenizer per variant on the first --train-mb MB
  (10^6 UTF-8 bytes, cut after the last whole line); with a documents.tsv(.xz) index beside the
  corpus (the shared training corpus has one) the report shows the bytes per language trained on
  and flags the languages with none (†) or under 100 kB (*).
columns: trained by this run, trained with cybpe (a -t file with cybpe's training metadata),
  published vocabularies (--real-vocabularies) and other -t files are labelled apart, each with
  its vocabulary size.
parallel: texts of equal line count (line-aligned translations) are taken as parallel; say
  --parallel yes/no to decide. On texts that are not parallel each text is divided by its own
  words and there is no premium, with a warning.
report: --report DIR writes index.html (self-contained, offline: tables, figures, settings, the
  command line), report.json and report.md; --save-tokenizers DIR keeps the trained tokenizers.

example:
  cybpe bench --train-corpus ../shared/corpora/train/mixed-train.txt.xz --train-mb 5 \\
      --vocab-size 8192 --markdown
"""


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG + "\nmetrics (bytes = UTF-8 bytes, chars = code points):\n" + definition_table(width=96)
    p.add_argument("--variants", default=None,
                   help="comma-separated pre-tokenizers (default: every registered one except 'regex')")
    p.add_argument("--texts", nargs="+", default=None, metavar="FILE",
                   help="per-language texts, named <lang>.txt (default: see below)")
    p.add_argument("--languages", default=None, help="comma-separated subset of the languages")
    p.add_argument("-t", "--tokenizer", action="append", default=[], metavar="FILE",
                   help="a vocabulary to apply, as FILE or LABEL=FILE (repeatable; a column of its own)")
    p.add_argument("--real-vocabularies", action="store_true",
                   help="add cl100k_base, o200k_base, Llama 3, Qwen3 and GPT-4o from $CYBPE_SHARED/vocab")
    p.add_argument("--parallel", choices=["auto", "yes", "no"], default="auto",
                   help="whether the texts are parallel (default auto: equal line counts)")
    p.add_argument("--train-corpus", default=None, metavar="FILE", help="train one tokenizer per variant on it (.xz ok)")
    p.add_argument("--train-mb", type=float, default=5.0,
                   help="MB (10^6 UTF-8 bytes) of the training corpus to use (default 5)")
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
    p.add_argument("--log", action="store_true", help="log axis on the figures (except chars per token)")
    p.add_argument("--report", default=None, metavar="DIR", help="write index.html, report.json, report.md there")
    p.add_argument("--save-tokenizers", default=None, metavar="DIR",
                   help="save each trained tokenizer as DIR/<variant>.json")
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


def _vocabularies(args) -> list[tuple[str, Path]]:
    """``(label, path)`` of every ``-t`` and ``--real-vocabularies`` entry."""
    out = []
    for spec in args.tokenizer:
        label, sep, path = spec.partition("=")
        if not sep or not label or os.path.exists(spec):
            path = spec
            label = Path(spec).stem if Path(spec).stem != "tokenizer" else Path(spec).resolve().parent.name
        out.append((label, Path(path)))
    if args.real_vocabularies:
        shared = report_mod.shared_dir()
        if shared is None or not (shared / "vocab").is_dir():
            raise CliError("--real-vocabularies needs the shared folder ($CYBPE_SHARED or ../shared) with vocab/")
        out += [(label, shared / "vocab" / rel) for label, rel in REAL_VOCABULARIES]
    labels = [label for label, _ in out]
    if len(set(labels)) != len(labels):
        raise CliError("two vocabularies have the same label; name them with -t LABEL=FILE")
    return out


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"cybpe": report_mod.__version__, "python": platform.python_version()}
    for name in ("regex", "numpy", "matplotlib"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    out["platform"] = platform.platform(terse=True)
    return out


def reproduce_command(args, paths: dict[str, Path], variants: list[str], vocabularies) -> str:
    """A command that measures the same thing again from any directory (absolute paths, every
    setting spelled out); outputs (--report, --json ...) are left for the reader to add."""
    cmd = ["cybpe", "bench", "--texts", *(str(p.resolve()) for p in paths.values()),
           "--variants", ",".join(v for v in variants if v not in dict(vocabularies)),
           "--reference", args.reference, "--parallel", args.parallel, "--speed-mb", str(args.speed_mb)]
    if args.words:
        cmd += ["--words", args.words]
    for label, path in vocabularies:
        cmd += ["-t", f"{label}={path.resolve()}"]
    if args.train_corpus:
        cmd += ["--train-corpus", str(Path(args.train_corpus).resolve()), "--train-mb", str(args.train_mb),
                "--vocab-size", str(args.vocab_size)]
    return shlex.join(cmd)


def run_bench(args) -> int:
    from cybpe.training.progress import Progress
    from cybpe.pretokenize.registry import get_pretokenizer

    if args.plot or args.report:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            if args.plot:
                raise CliError("--plot needs matplotlib: pip install 'cybpe[plot]'") from None
            print("cybpe bench: warning: matplotlib is not installed, so the report has no figures "
                  "(pip install 'cybpe[plot]')", file=sys.stderr)
    if bool(args.train_corpus) != (args.vocab_size is not None):
        raise CliError("--train-corpus and --vocab-size go together")
    if args.train_corpus and not Path(args.train_corpus).is_file():
        raise CliError(f"{args.train_corpus}: no such file")
    if args.save_tokenizers and not args.train_corpus:
        raise CliError("--save-tokenizers keeps what --train-corpus trains; give --train-corpus")
    variants = ([v.strip() for v in args.variants.split(",") if v.strip()] if args.variants
                else report_mod.default_variants())
    for name in variants:
        get_pretokenizer(name)  # unknown names fail now, with suggestions
    paths = _text_paths(args)
    texts = {lang: report_mod.read_text(p) for lang, p in paths.items()}
    vocabularies = _vocabularies(args)

    applied = {}
    kinds: dict = {}
    mixes: dict = {}
    published = {label for label, _ in REAL_VOCABULARIES} if args.real_vocabularies else set()
    info: dict = {"text_files": {lang: str(p) for lang, p in paths.items()},
                  "text_set": ", ".join(sorted({str(p.parent) for p in paths.values()})),
                  "command_line": shlex.join(["cybpe", *getattr(args, "argv", sys.argv[1:])]),
                  "cwd": os.getcwd(), "versions": _versions(), "vocabularies": {}}
    for label, path in vocabularies:
        if label in variants:
            raise CliError(f"the vocabulary label {label!r} is also a variant; name it with -t LABEL=FILE")
        tok = load_tokenizer(str(path))
        tok.name = label
        applied[label] = tok
        metadata = getattr(tok, "metadata", None) or {}
        kinds[label] = ("vocabulary" if label in published else "own" if "training" in metadata else "file")
        mixes[label] = metadata.get("training_mix")
        info["vocabularies"][label] = {"file": str(path), "sha256": _sha256(path), "n_vocab": tok.n_vocab,
                                       "pretokenizer": tok.pretokenizer.name, "kind": kinds[label]}
    info["reproduce"] = reproduce_command(args, paths, variants, vocabularies)
    columns = variants + list(applied)

    n_steps = len(columns) * (len(texts) + 1) + (len(variants) if args.train_corpus else 0)
    started = time.perf_counter()
    tokenizers = dict(applied)
    train_seconds: dict[str, float] = {}
    with Progress(show_progress(args), "bench", unit="steps", total=n_steps) as bar:
        step = lambda: bar.advance(1)  # noqa: E731
        if args.train_corpus:
            corpus = report_mod.read_prefix(Path(args.train_corpus), args.train_mb)
            trained = report_mod.train_per_variant(corpus, variants, args.vocab_size, workers=args.workers,
                                                   step=step, seconds=train_seconds)
            for name, tok in trained.items():
                tok.name = f"{name}-{args.vocab_size}"
            tokenizers.update(trained)
            data = corpus.encode("utf-8")
            mix = report_mod.training_mix(Path(args.train_corpus), len(data))
            info["training"] = {"corpus": str(args.train_corpus), "corpus_name": Path(args.train_corpus).name,
                                "chars": len(corpus), "bytes": len(data), "train_mb": args.train_mb,
                                "sha256": hashlib.sha256(data).hexdigest(), "vocab_size": args.vocab_size,
                                "languages": mix}
            for name in trained:
                mixes[name] = mix
            if args.save_tokenizers:
                folder = Path(args.save_tokenizers)
                folder.mkdir(parents=True, exist_ok=True)
                for name, tok in trained.items():
                    tok.save(folder / f"{name}.json")
                info["saved_tokenizers"] = {name: str(folder / f"{name}.json") for name in trained}
        parallel = None if args.parallel == "auto" else args.parallel == "yes"
        if parallel is None and all(p.resolve().parent == report_mod.UDHR_SAMPLE for p in paths.values()):
            parallel = True  # the bundled sample: the same declaration in every language, not line-aligned
            info["parallel_reason"] = "the bundled UDHR sample (the same content, not line-aligned)"
        elif parallel is not None:
            info["parallel_reason"] = f"declared (--parallel {args.parallel})"
        report = report_mod.build_report(texts, columns, tokenizers, reference=args.reference,
                                         word_basis=args.words, parallel=parallel,
                                         kinds=kinds, training_mixes=mixes,
                                         train_seconds=train_seconds, speed_mb=args.speed_mb,
                                         step=step, info=info)
    if not args.variants:  # the default set: say which registered pre-tokenizers it left out
        registered = {i["name"] for i in report_mod.list_pretokenizers()}
        report["notes"].extend(f"{name} (a registered pre-tokenizer) is not compared by default: {reason}; "
                               f"name it in --variants to include it"
                               for name, reason in sorted(report_mod.NOT_COMPARED_BY_DEFAULT.items())
                               if name in registered and name != "regex")
    report["seconds"] = round(time.perf_counter() - started, 2)
    for warning in report["warnings"]:
        print(f"cybpe bench: warning: {warning}", file=sys.stderr)

    if args.plot:
        metric = (args.metric or [m for m in ("tokens_per_word", "pieces_per_word")
                                  if m in report_mod.available_metrics(report)])[0]
        report_mod.plot(report, metric, args.plot, log=args.log)
        print(f"wrote {args.plot} ({metric})", file=sys.stderr)
    if args.report:
        from cybpe.report.html import write_report

        write_report(report, args.report, log=args.log)
        print(f"wrote {Path(args.report) / 'index.html'} (and report.json, report.md)", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        sys.stdout.write(report_mod.render(report, args.metric, markdown=args.markdown))
    return 0
