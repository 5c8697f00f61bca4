"""Per-language table of the training variants at one vocabulary size, from one run.

    python bench/training_variants_table.py [--per-language-bytes N] [--vocab-size V]

Training text: the shared training corpus (``corpora/train``), the documents of each NTREX language
that has any, the first N bytes of each language's documents (whole documents). Dev set: the first
half of the NTREX documents (line-aligned in every language); evaluation: the other half. Every
variant trains on the same texts; plain BPE and its rule variants see them concatenated.

Printed per variant: training seconds, global bytes/token on the evaluation half, the Gini of the
per-language token counts there, the worst premium (tokens / English tokens), and chars/token per
language; a JSON file keeps everything.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import time
from pathlib import Path

import cybpe
from cybpe.report.variants import gini


def shared() -> Path:
    return Path(os.environ.get("CYBPE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def training_texts(root: Path, languages: list[str], cap: int) -> dict[str, list[str]]:
    rows = lzma.open(root / "corpora/train/documents.tsv.xz", "rt", encoding="utf-8").read().splitlines()[1:]
    data = lzma.open(root / "corpora/train/mixed-train.txt.xz", "rb").read()
    out: dict[str, list[str]] = {lang: [] for lang in languages}
    used = {lang: 0 for lang in languages}
    for row in rows:
        offset, size, lang = row.split("\t")[:3]
        if lang in out and used[lang] < cap:
            out[lang].append(data[int(offset):int(offset) + int(size)].decode("utf-8"))
            used[lang] += int(size)
    return {lang: texts for lang, texts in out.items() if texts}


def ntrex_halves(root: Path, languages: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    dev, held = {}, {}
    for lang in languages:
        docs = (root / "corpora/eval/parallel-ntrex" / f"{lang}.txt").read_text(encoding="utf-8").split("\n\n")
        half = len(docs) // 2
        dev[lang], held[lang] = "\n\n".join(docs[:half]), "\n\n".join(docs[half:])
    return dev, held


def measure(tok: cybpe.Tokenizer, held: dict[str, str]) -> dict:
    tokens = {lang: len(tok.encode_ordinary(text)) for lang, text in held.items()}
    n_bytes = sum(len(t.encode("utf-8")) for t in held.values())
    return {
        "bytes_per_token": n_bytes / sum(tokens.values()),
        "tokens": tokens,
        "chars_per_token": {lang: len(held[lang]) / n for lang, n in tokens.items()},
        "gini": gini(tokens.values()),
        "max_premium": max(n / tokens["en"] for n in tokens.values()),
        "total_tokens": sum(tokens.values()),
    }


def prune_sweep(root: Path, everything: list[str], held: dict[str, str], V: int, ks: list[int]) -> None:
    """Tokens on held-out text (NTREX half, the first 300 kB of every eval/docs and eval/code file)
    for plain BPE and for pruning at each k, all trained on the same counts."""
    docs = sorted((root / "corpora/eval/docs").glob("*.txt")) + sorted((root / "corpora/eval/code").glob("*.txt"))
    texts = {"ntrex": list(held.values()),
             "docs+code": [p.read_text(encoding="utf-8")[:300_000] for p in docs]}
    counts = cybpe.count(everything)
    plain = cybpe.train(counts, V)

    def total(tok: cybpe.Tokenizer, group: list[str]) -> int:
        return sum(len(ids) for ids in tok.encode_ordinary_batch(group))

    base = {name: total(plain, group) for name, group in texts.items()}
    train_tokens = sum(len(plain.encode_ordinary(t)) for t in everything)
    print(f"plain: {base} training text {train_tokens}")
    for k in ks:
        tok = cybpe.train(counts, V, prune_exposure=k)
        report = tok.metadata["training"]["pruned"]
        row = {name: total(tok, group) for name, group in texts.items()}
        on_train = sum(len(tok.encode_ordinary(t)) for t in everything)
        change = {name: f"{100 * (row[name] - base[name]) / base[name]:+.3f}%" for name in row}
        print(f"k={k}: refused {report['refused_tokens']} dead after {report['dead_after']} "
              f"{row} {change} training text {100 * (on_train - train_tokens) / train_tokens:+.3f}%", flush=True)


def budget_table(args, root: Path) -> None:
    """The fairness comparison of issue 42: plain BPE, SuperBPE, parity-aware (classic, hybrid,
    window) and budgeted parity on one language-balanced sample, measured on held-out NTREX."""
    from cybpe.training.balance import balanced_sample

    ntrex = sorted(p.stem for p in (root / "corpora/eval/parallel-ntrex").glob("*.txt"))
    sample = balanced_sample(root / "corpora/train/mixed-train.txt.xz", args.balanced, languages=ntrex,
                             max_repeat=args.max_repeat)
    if args.dev_fill:
        languages = ["en"] + [lang for lang in ntrex if lang != "en"]
    else:
        languages = ["en"] + [lang for lang in ntrex if sample.sampled.get(lang) and lang != "en"]
    train = {lang: list(sample.texts[lang]) for lang in languages}
    print(sample.table(), flush=True)
    dev, held = ntrex_halves(root, languages)
    filled = []
    for lang in languages:  # languages with little text also train on their dev half (never on the measured half)
        if args.dev_fill and sample.sampled.get(lang, 0) < args.dev_fill:
            train[lang].append(dev[lang])
            filled.append(lang)
    if filled:
        print(f"dev-fill: {', '.join(filled)}", flush=True)
    everything = [t for lang in languages for t in train[lang]]
    V, pre = args.vocab_size, args.pretokenizer
    dev_set = lambda **kw: cybpe.ParallelSet({l: dev[l] for l in languages}, **kw)  # noqa: E731
    variants = {
        "plain BPE": lambda: cybpe.train(everything, V, pre),
        f"SuperBPE (t={3 * V // 4})": lambda: cybpe.train(everything, V, pre, superword_from=3 * V // 4),
        "parity-aware": lambda: cybpe.train(train, V, pre, parity=dev_set()),
        f"parity-aware hybrid ({V // 2} global)": lambda: cybpe.train(train, V, pre, parity=dev_set(global_merges=V // 2)),
        "parity-aware window (W=100, alpha=2)": lambda: cybpe.train(train, V, pre, parity=dev_set(window=100, alpha=2.0)),
    }
    for b in args.budget:
        for fallback in args.fallback:
            variants[f"parity budget {b:g}% ({fallback})"] = (
                lambda b=b, fallback=fallback: cybpe.train_parity_budget(train, V, dev_set(), budget=b / 100,
                                                                         fallback=fallback, pretokenizer=pre))
            if args.budget_window:
                variants[f"parity budget {b:g}% ({fallback}, window)"] = (
                    lambda b=b, fallback=fallback: cybpe.train_parity_budget(
                        train, V, dev_set(window=100, alpha=2.0), budget=b / 100, fallback=fallback, pretokenizer=pre))
    if args.only:
        variants = {k: v for k, v in variants.items() if k == "plain BPE" or any(s in k for s in args.only.split(","))}
    en_words = len(held["en"].split())
    results = {"languages": languages, "vocab_size": V, "pretokenizer": pre, "en_words_held_out": en_words,
               "train_bytes": {l: sum(len(t.encode("utf-8")) for t in train[l]) for l in languages},
               "dev_fill": filled, "available_bytes": sample.available, "per_language": args.balanced,
               "max_repeat": args.max_repeat, "held_bytes": {l: len(held[l].encode("utf-8")) for l in languages},
               "variants": {}}
    out = Path(args.out)
    if out.exists():
        old = json.loads(out.read_text())
        if old.get("vocab_size") == V and old.get("train_bytes") == results["train_bytes"]:
            results["variants"] = old["variants"]
    for name, make in variants.items():
        if name in results["variants"]:
            continue
        started = time.perf_counter()
        tok = make()
        seconds = time.perf_counter() - started
        row = measure(tok, held)
        row["train_seconds"] = round(seconds, 1)
        row["cost"] = {lang: n / en_words for lang, n in row["tokens"].items()}
        row["report"] = {k: v for k, v in tok.metadata["training"].items() if k != "merge_counts"}
        results["variants"][name] = row
        plain = results["variants"].get("plain BPE")
        change = ""
        if plain:
            change = (f"  gini {100 * (row['gini'] / plain['gini'] - 1):+.1f}%  en "
                      f"{100 * (row['tokens']['en'] / plain['tokens']['en'] - 1):+.2f}%")
        print(f"{name:34s} {seconds:7.1f}s  bytes/token {row['bytes_per_token']:.3f}  gini {row['gini']:.3f}  "
              f"max premium {row['max_premium']:.2f}  en cost {row['cost']['en']:.3f}{change}", flush=True)
        out.write_text(json.dumps(results, indent=1, ensure_ascii=False))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-language-bytes", type=int, default=300_000)
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--out", default="training-variants.json")
    parser.add_argument("--only", default="")
    parser.add_argument("--prune-sweep", default="", help="comma-separated k: pruning's length change only")
    parser.add_argument("--balanced", type=int, default=0, metavar="BYTES",
                        help="the fairness table: a balanced sample of BYTES per NTREX language (small ones "
                             "up-sampled, --max-repeat), plain/SuperBPE/parity/budgeted parity")
    parser.add_argument("--max-repeat", type=float, default=4.0)
    parser.add_argument("--budget", type=float, nargs="*", default=[2.0], help="budgets in percent")
    parser.add_argument("--fallback", nargs="*", default=["global", "protected"])
    parser.add_argument("--pretokenizer", default="cl100k")
    parser.add_argument("--dev-fill", type=int, default=0, metavar="BYTES",
                        help="languages with less training text also train on their NTREX dev half")
    parser.add_argument("--budget-window", action="store_true", help="also budgeted parity with the window")
    args = parser.parse_args()
    root = shared()
    if args.balanced:
        budget_table(args, root)
        return
    ntrex = sorted(p.stem for p in (root / "corpora/eval/parallel-ntrex").glob("*.txt"))
    train = training_texts(root, ntrex, args.per_language_bytes)
    languages = ["en"] + [lang for lang in ntrex if lang in train and lang != "en"]
    dev, held = ntrex_halves(root, languages)
    everything = [t for lang in languages for t in train[lang]]
    V = args.vocab_size
    if args.prune_sweep:
        prune_sweep(root, everything, held, V, [int(k) for k in args.prune_sweep.split(",")])
        return
    variants = {
        "plain BPE": lambda: cybpe.train(everything, V),
        "merge_veto='scripts'": lambda: cybpe.train(everything, V, merge_veto="scripts"),
        "max_token_length=16": lambda: cybpe.train(everything, V, max_token_length=16),
        f"SuperBPE (t={3 * V // 4})": lambda: cybpe.train(everything, V, superword_from=3 * V // 4),
        "pruned (exposure < 8)": lambda: cybpe.train(everything, V, prune_exposure=8),
        "parity-aware": lambda: cybpe.train({l: train[l] for l in languages}, V,
                                            parity=cybpe.ParallelSet({l: dev[l] for l in languages})),
        f"parity-aware hybrid ({V // 2} global)": lambda: cybpe.train(
            {l: train[l] for l in languages}, V,
            parity=cybpe.ParallelSet({l: dev[l] for l in languages}, global_merges=V // 2)),
        "parity-aware window (W=100, alpha=2)": lambda: cybpe.train(
            {l: train[l] for l in languages}, V,
            parity=cybpe.ParallelSet({l: dev[l] for l in languages}, window=100, alpha=2.0)),
    }
    if args.only:
        variants = {k: v for k, v in variants.items() if any(s in k for s in args.only.split(","))}
    results = {"languages": languages, "vocab_size": V,
               "train_bytes": {l: sum(len(t.encode("utf-8")) for t in train[l]) for l in languages},
               "held_bytes": {l: len(held[l].encode("utf-8")) for l in languages}, "variants": {}}
    for name, make in variants.items():
        started = time.perf_counter()
        tok = make()
        seconds = time.perf_counter() - started
        row = measure(tok, held)
        row["train_seconds"] = round(seconds, 1)
        row["report"] = {k: v for k, v in tok.metadata["training"].items() if k != "merge_counts"}
        results["variants"][name] = row
        print(f"{name:32s} {seconds:7.1f}s  bytes/token {row['bytes_per_token']:.3f}  "
              f"gini {row['gini']:.3f}  max premium {row['max_premium']:.2f}  tokens {row['total_tokens']}",
              flush=True)
        Path(args.out).write_text(json.dumps(results, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
