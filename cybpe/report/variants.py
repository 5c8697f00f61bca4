"""The pre-tokenizer comparison report behind ``cybpe bench``: what each variant does to each language.

Inputs are per-language texts (ideally translations of the same content, such as the line-aligned
NTREX news texts) and a list of pre-tokenizer variants, with optionally one tokenizer per variant
(trained on the same data by :func:`train_per_variant`, or applied from a vocabulary file).

Metrics, per language x variant (``bytes`` are UTF-8 bytes):

* ``pieces_per_word``, ``bytes_per_piece``: pre-tokenization alone. BPE never merges across
  pieces, so pieces per word is a floor under tokens per word whatever the vocabulary.
* ``tokens_per_word``, ``bytes_per_token``: with the variant's tokenizer.
* ``premium``: tokens of the language / tokens of the reference language (English) on the same
  parallel text; 1.0 means "costs what English costs". Parallel texts only (detected as files
  of equal line count, or declared).

Every figure is defined once, in :data:`cybpe.report.metrics.DEFINITIONS`.

Per variant: ``gini`` of the token cost (tokens per word) across languages, 0 when every
language costs the same, towards 1 when the cost is concentrated on a few; ``gini_pieces`` the
same for pieces; and the split throughput in MB/s of the ``regex`` path (``PreTokenizer.split``
with the ``regex`` module) and of the compiled path (``Scanner.split_utf8`` on UTF-8 bytes, the
path ``encode`` takes), timed on the same sample.

Words. Whitespace-separated words do not exist in Chinese, Japanese, Thai, Lao, Khmer, Burmese,
Tibetan or Dzongkha, so on parallel texts (``word_basis="reference"``, the default when the
reference language is among the texts) every language is divided by the number of whitespace
words of the REFERENCE text: "per word" then means "per English word of the same content", which
is comparable across all scripts. ``word_basis="whitespace"`` divides each text by its own
whitespace words instead (meaningful only for spaced scripts; the default, with a warning, when
the texts are not parallel or there is no reference).
"""

from __future__ import annotations

import hashlib
import lzma
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.pretokenize.registry import get_pretokenizer, list_pretokenizers
from cybpe._version import __version__
from cybpe.errors import InvalidParameterError
from cybpe.report.tables import text_table as _table

METRICS = ("pieces_per_word", "bytes_per_piece", "tokens_per_word", "chars_per_token", "bytes_per_token", "premium")
NTREX = Path("corpora") / "eval" / "parallel-ntrex"
#: The UDHR sample texts, package data (so they come with a wheel too).
UDHR_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "udhr"
REPO = Path(__file__).resolve().parents[2]


# -- inputs ------------------------------------------------------------------------------------
def shared_dir(cwd: Optional[Path] = None) -> Optional[Path]:
    """``$CYBPE_SHARED``, else ``../shared`` from the current directory, else next to the repo."""
    configured = os.environ.get("CYBPE_SHARED")
    if configured:
        return Path(configured) if Path(configured).is_dir() else None
    for candidate in ((cwd or Path.cwd()).parent / "shared", REPO.parent / "shared"):
        if candidate.is_dir():
            return candidate
    return None


def default_text_paths(cwd: Optional[Path] = None) -> dict[str, Path]:
    """NTREX parallel texts from the shared folder, else the bundled UDHR sample, else ``{}``."""
    shared = shared_dir(cwd)
    folders = [shared / NTREX] if shared is not None else []
    folders.append(UDHR_SAMPLE)
    for folder in folders:
        found = sorted(folder.glob("*.txt"))
        if found:
            return {p.stem: p for p in found}
    return {}


def read_text(path: Path) -> str:
    """A whole UTF-8 file, line endings untouched."""
    return Path(path).read_bytes().decode("utf-8")


def read_prefix(path: Path, megabytes: float) -> str:
    """About the first ``megabytes`` MB of characters of a text file (``.xz`` decompressed), cut
    after the last complete line."""
    opener = lzma.open if str(path).endswith(".xz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        text = f.read(max(1, int(megabytes * 1_000_000)))
    cut = text.rfind("\n")
    return text[: cut + 1] if cut >= 0 else text


#: Registered pre-tokenizers the default comparison leaves out, and why (``--variants`` names
#: them to include them anyway).
NOT_COMPARED_BY_DEFAULT = {
    "regex": "needs a pattern",
    "superbpe": "SuperBPE's stage-2 splitter keeps whole phrases together by design (only numbers "
                "cut), so its pieces per word (about 0.05) say nothing about word splitting",
}


def default_variants() -> list[str]:
    """Every registered pre-tokenizer that needs no parameter, except those in
    :data:`NOT_COMPARED_BY_DEFAULT`."""
    return [i["name"] for i in list_pretokenizers()
            if i["name"] not in NOT_COMPARED_BY_DEFAULT
            and all(v["default"] is not None for v in i["params"].values())]


# -- metrics -----------------------------------------------------------------------------------
def gini(values: Iterable[float]) -> float:
    """Gini coefficient: mean absolute difference over all pairs / (2 x mean); 0 = all equal."""
    xs = [float(v) for v in values]
    if not xs or sum(xs) == 0:
        return 0.0
    total = sum(abs(a - b) for a in xs for b in xs)
    return total / (2 * len(xs) ** 2 * (sum(xs) / len(xs)))


def word_counts(texts: dict[str, str], basis: str, reference: str) -> dict[str, int]:
    """Words per language under ``basis`` (``"reference"`` or ``"whitespace"``; module docstring)."""
    if basis == "reference":
        if reference not in texts:
            raise InvalidParameterError(f"word basis 'reference' needs the reference language {reference!r} among the texts")
        n = len(texts[reference].split())
        return {lang: n for lang in texts}
    if basis == "whitespace":
        return {lang: len(text.split()) for lang, text in texts.items()}
    raise InvalidParameterError(f"word basis must be 'reference' or 'whitespace', not {basis!r}")


def detect_parallel(texts: dict[str, str]) -> bool:
    """Whether the texts look line-aligned: at least two, every one with the same number of lines
    (more than one), as translations line by line are (NTREX). A guess: declare it to be sure."""
    counts = {text.count("\n") + (0 if text.endswith("\n") else 1) for text in texts.values()}
    return len(texts) >= 2 and len(counts) == 1 and counts.pop() > 1


def count_pieces(pre: PreTokenizer, text: str) -> int:
    """Pre-tokenization pieces of ``text`` on the path ``encode`` uses."""
    if pre.uses_scanner and pre.refine is None:
        return int(pre.scanner.split_utf8(text.encode("utf-8")).shape[0])
    return len(pre.split_spans(text))


def _sample(texts: dict[str, str], megabytes: float) -> str:
    share = max(1, int(megabytes * 1_000_000 / max(1, len(texts))))
    return "".join(t.encode("utf-8")[:share].decode("utf-8", "ignore") for t in texts.values())


def _mb_per_s(fn: Callable[[], object], n_bytes: int, min_seconds: float) -> float:
    runs, started = 0, time.perf_counter()
    while True:
        fn()
        runs += 1
        elapsed = time.perf_counter() - started
        if elapsed >= min_seconds:
            return n_bytes * runs / elapsed / 1e6


def split_throughput(pre: PreTokenizer, sample: str, min_seconds: float = 0.2) -> dict[str, Optional[float]]:
    """MB/s of the regex path and of the compiled path (None without a scanner) on ``sample``."""
    data = sample.encode("utf-8")
    regex_only = pre.with_regex_only()
    out: dict[str, Optional[float]] = {"regex_mb_s": _mb_per_s(lambda: regex_only.split(sample), len(data), min_seconds)}
    if pre.scanner is None:
        out["compiled_mb_s"] = None
    else:  # a scanner gives final spans (refine included): the path encode and training use
        out["compiled_mb_s"] = _mb_per_s(lambda: pre.scanner.split_utf8(data), len(data), min_seconds)
    return out


def train_per_variant(corpus: str, variants: list[str], vocab_size: int, *, workers: Optional[int] = None,
                      step: Callable[[], None] = lambda: None,
                      seconds: Optional[dict[str, float]] = None) -> dict[str, Any]:
    """One tokenizer per variant, all trained on the same ``corpus`` text with ``vocab_size``;
    ``seconds`` (when given) receives each variant's wall-clock training time."""
    from cybpe.api.train import train

    out = {}
    for name in variants:
        started = time.perf_counter()
        tok = train([corpus], vocab_size, name, workers=workers, progress=False)
        if seconds is not None:
            seconds[name] = time.perf_counter() - started
        out[name] = tok
        step()
    return out


def encode_throughput(tokenizer: Any, sample: str, min_seconds: float = 0.2) -> float:
    """MB/s of ``tokenizer.encode_ordinary`` (the compiled split + encode path) on ``sample``."""
    return _mb_per_s(lambda: tokenizer.encode_ordinary(sample), len(sample.encode("utf-8")), min_seconds)


def build_report(
    texts: dict[str, str],
    variants: list[str],
    tokenizers: Optional[dict[str, Any]] = None,
    *,
    reference: str = "en",
    word_basis: Optional[str] = None,
    parallel: Optional[bool] = None,
    kinds: Optional[dict[str, str]] = None,
    train_seconds: Optional[dict[str, float]] = None,
    speed_mb: float = 1.0,
    step: Callable[[], None] = lambda: None,
    info: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """The report as plain data (see the module docstring and ``metrics.DEFINITIONS``).

    ``variants`` are the columns: a pre-tokenizer name, or any label that ``tokenizers`` maps to
    a tokenizer (a trained variant or a real vocabulary) whose tokens are counted for it; columns
    without a tokenizer get pre-tokenization metrics only, with a note saying so. ``parallel``
    (None: :func:`detect_parallel`) decides the default word basis and whether premiums are
    computed: on non-parallel texts each text is divided by its own words and there is no premium,
    with a warning in ``notes``. ``step()`` is called once per column x language and once per
    throughput measurement (for a progress bar). ``kinds`` names what a column with a tokenizer
    is (default ``"trained"``; ``"vocabulary"`` for a real one) and ``train_seconds`` how long
    each trained column took (both go into ``summary``).
    """
    if not texts:
        raise InvalidParameterError("no texts to measure")
    tokenizers = dict(tokenizers or {})
    notes: list[str] = []
    warnings: list[str] = []
    detected = detect_parallel(texts)
    is_parallel = detected if parallel is None else bool(parallel)
    if parallel is None and not detected and len(texts) > 1:
        warnings.append("the texts are not line-aligned (their line counts differ), so they are taken as "
                        "NOT parallel; say --parallel yes if they are translations of the same content")
    if word_basis is None:
        basis = "reference" if is_parallel and reference in texts else "whitespace"
        if not is_parallel:
            warnings.append("non-parallel texts: per-word figures use each text's own whitespace words "
                            "(meaningless for scripts without spaces, such as zh, ja, th, lo, km, my, bo)")
    else:
        basis = word_basis
        if basis == "reference" and not is_parallel:
            warnings.append("word basis 'reference' on texts that are not parallel: every language is "
                            f"divided by the word count of {reference!r}, which is not the same content")
    info = dict(info or {})
    info.setdefault("parallel_reason", "detected: equal line counts" if detected
                    else "detected: the line counts differ")
    words = word_counts(texts, basis, reference)
    empty = sorted(lang for lang, n in words.items() if n == 0)
    if empty:
        notes.append(f"left out {', '.join(empty)}: no whitespace-separated words in the text")
        texts = {lang: t for lang, t in texts.items() if lang not in empty}
        if not texts:
            raise InvalidParameterError("no words in any of the texts")
    if is_parallel and reference not in texts:
        notes.append(f"no premium: the reference language {reference!r} is not among the texts")
    elif not is_parallel:
        notes.append("no premium: a premium compares the same content, and these texts are not parallel")
    n_bytes = {lang: len(t.encode("utf-8")) for lang, t in texts.items()}
    sample = _sample(texts, speed_mb)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    summary: dict[str, dict[str, Any]] = {}
    for name in variants:
        tok = tokenizers.get(name)
        pre = tok.pretokenizer if tok is not None else get_pretokenizer(name)
        if tok is None:
            notes.append(f"{name}: pre-tokenization figures only (no tokenizer trained or given for it), "
                         "so it is left out of every token plot and table")
        rows = {}
        for lang, text in texts.items():
            pieces = count_pieces(pre, text)
            row: dict[str, Any] = {"pieces": pieces, "pieces_per_word": pieces / words[lang],
                                   "bytes_per_piece": n_bytes[lang] / pieces if pieces else None,
                                   "tokens": None, "tokens_per_word": None, "chars_per_token": None,
                                   "bytes_per_token": None, "premium": None}
            if tok is not None:
                n = tok.count(text)
                row.update(tokens=n, tokens_per_word=n / words[lang],
                           chars_per_token=len(text) / n if n else None,
                           bytes_per_token=n_bytes[lang] / n if n else None)
            rows[lang] = row
            step()
        if tok is not None and is_parallel and reference in rows and rows[reference]["tokens"]:
            for row in rows.values():
                row["premium"] = row["tokens"] / rows[reference]["tokens"]
        results[name] = rows
        speed = split_throughput(pre, sample)
        step()
        has_tokens = tok is not None
        premiums = [r["premium"] for r in rows.values() if r["premium"] is not None]
        summary[name] = {
            "kind": (kinds or {}).get(name, "trained") if has_tokens else "pre-tokenizer",
            "tokenizer": getattr(tok, "name", None),
            "pretokenizer": pre.name,
            "n_vocab": tok.n_vocab if has_tokens else None,
            "gini": gini(r["tokens_per_word"] for r in rows.values()) if has_tokens else None,
            "gini_pieces": gini(r["pieces_per_word"] for r in rows.values()),
            "mean_premium": sum(premiums) / len(premiums) if premiums else None,
            "encode_mb_s": encode_throughput(tok, sample) if has_tokens else None,
            "train_seconds": (train_seconds or {}).get(name),
            **speed,
        }
    return {
        "cybpe_version": __version__,
        "reference": reference,
        "word_basis": basis,
        "parallel": is_parallel,
        "parallel_detected": detected,
        "languages": list(texts),
        "variants": list(variants),
        "texts": {lang: {"bytes": n_bytes[lang], "chars": len(texts[lang]), "words": words[lang],
                         "lines": texts[lang].count("\n"),
                         "sha256": hashlib.sha256(texts[lang].encode("utf-8")).hexdigest()}
                  for lang in texts},
        "speed_sample_bytes": len(sample.encode("utf-8")),
        **info,
        "warnings": warnings,
        "notes": notes,
        "results": results,
        "summary": summary,
    }


# -- output ------------------------------------------------------------------------------------
def available_metrics(report: dict[str, Any]) -> list[str]:
    """The metrics that have a value for at least one variant."""
    found = []
    for metric in METRICS:
        if any(row[metric] is not None for rows in report["results"].values() for row in rows.values()):
            found.append(metric)
    return found


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def metric_table(report: dict[str, Any], metric: str, markdown: bool = False) -> str:
    """Languages down, variants across, one metric."""
    if metric not in METRICS:
        raise InvalidParameterError(f"unknown metric {metric!r}; metrics: {', '.join(METRICS)}")
    header = ["lang"] + report["variants"]
    rows = [[lang] + [_fmt(report["results"][v][lang][metric]) for v in report["variants"]]
            for lang in report["languages"]]
    return _table(header, rows, markdown)


def summary_table(report: dict[str, Any], markdown: bool = False) -> str:
    """Variants down: Gini of token and piece cost, mean premium, split MB/s regex vs compiled."""
    header = ["variant", "kind", "gini tokens", "gini pieces", "mean premium", "encode MB/s", "training s",
              "split MB/s regex", "split MB/s compiled", "speedup"]
    rows = []
    for name in report["variants"]:
        s = report["summary"][name]
        ratio = s["compiled_mb_s"] / s["regex_mb_s"] if s["compiled_mb_s"] and s["regex_mb_s"] else None
        rows.append([name, s.get("kind") or "–", _fmt(s["gini"], 3), _fmt(s["gini_pieces"], 3),
                     _fmt(s["mean_premium"]), _fmt(s.get("encode_mb_s"), 1), _fmt(s.get("train_seconds"), 1),
                     _fmt(s["regex_mb_s"], 1), _fmt(s["compiled_mb_s"], 1),
                     f"{ratio:.0f}x" if ratio else "–"])
    return _table(header, rows, markdown)


def render(report: dict[str, Any], metrics: Optional[list[str]] = None, markdown: bool = False) -> str:
    """The tables for ``metrics`` (default: pieces/word, tokens/word and premium when present)."""
    if not metrics:
        present = available_metrics(report)
        metrics = [m for m in ("pieces_per_word", "tokens_per_word", "premium") if m in present]
    parts = []
    per_word = "per English word" if report["word_basis"] == "reference" else "per whitespace word"
    for metric in metrics:
        title = metric.replace("_", " ").replace("per word", per_word)
        parts.append((f"**{title}**" if markdown else title) + "\n\n" + metric_table(report, metric, markdown))
    parts.append(("**per variant**" if markdown else "per variant") + "\n\n" + summary_table(report, markdown))
    return "\n\n".join(parts) + "\n"


def plot(report: dict[str, Any], metric: str, path: os.PathLike, *, log: bool = False) -> None:
    """One dot plot of ``metric`` over every column that has it (see :mod:`cybpe.report.plots`)."""
    from cybpe.report import plots

    columns = plots.columns_with(report, metric)
    if not columns:
        raise InvalidParameterError(f"no column has {metric!r} for every language")
    from cybpe.io.atomic import atomic_write_bytes

    atomic_write_bytes(path, plots.draw(report, metric, columns, "every column", log=log))
