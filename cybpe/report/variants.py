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

import numpy as np

from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.report import languages
from cybpe.pretokenize.registry import get_pretokenizer, list_pretokenizers
from cybpe._version import __version__
from cybpe.errors import InvalidParameterError
from cybpe.report.tables import text_table as _table

METRICS = ("pieces_per_word", "bytes_per_piece", "tokens_per_word", "fertility", "chars_per_token", "bytes_per_token",
           "premium")
#: What a column with a tokenizer is: trained by this run, a cybpe-trained tokenizer file, a
#: published vocabulary (``--real-vocabularies``), or another tokenizer file.
KINDS = {"trained": "trained by this run", "own": "trained with cybpe (tokenizer file)",
         "vocabulary": "published vocabularies", "file": "tokenizer files"}
#: Bootstrap resamples for the 95% intervals, and their seed (fixed: the same texts give the same
#: intervals).
BOOTSTRAP = 1000
BOOTSTRAP_SEED = 0
#: A language with less training text than this (UTF-8 bytes) is flagged "little training text";
#: with none at all, "no training text".
LITTLE_TRAINING_BYTES = 100_000
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
    """The first ``megabytes`` MB (10**6 UTF-8 bytes) of a text file (``.xz`` decompressed), cut
    after the last complete line (so never inside a character); at most that many bytes."""
    opener = lzma.open if str(path).endswith(".xz") else open
    with opener(path, "rb") as f:
        data = f.read(max(1, int(megabytes * 1_000_000)))
    cut = data.rfind(b"\n")
    return (data[: cut + 1] if cut >= 0 else data).decode("utf-8", "ignore")


def training_mix(corpus_path: Path, n_bytes: int) -> Optional[dict[str, int]]:
    """UTF-8 bytes per language in the first ``n_bytes`` of ``corpus_path``, from the
    ``documents.tsv(.xz)`` index beside it (columns ``offset``, ``bytes``, ``lang``: the shared
    training corpus has one); None when there is no such index."""
    folder = Path(corpus_path).parent
    for index in (folder / "documents.tsv.xz", folder / "documents.tsv"):
        if index.is_file():
            break
    else:
        return None
    opener = lzma.open if index.suffix == ".xz" else open
    mix: dict[str, int] = {}
    with opener(index, "rt", encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        try:
            at, size, lang = header.index("offset"), header.index("bytes"), header.index("lang")
        except ValueError:
            return None
        for line in f:
            cols = line.rstrip("\n").split("\t")
            start, length = int(cols[at]), int(cols[size])
            if start >= n_bytes:
                continue
            mix[cols[lang]] = mix.get(cols[lang], 0) + min(length, n_bytes - start)
    return dict(sorted(mix.items(), key=lambda kv: -kv[1]))


def training_flag(mix: Optional[dict[str, int]], lang: str) -> Optional[str]:
    """``"none"`` / ``"little"`` when the training mix has no / under 100 kB of ``lang``, else None
    (also None when the mix is unknown)."""
    if mix is None:
        return None
    n = mix.get(lang, 0)
    if n == 0:
        return "none"
    return "little" if n < LITTLE_TRAINING_BYTES else None


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
def coefficient_of_variation(values: Iterable[float]) -> float:
    """Population standard deviation / mean; 0 = all equal."""
    xs = [float(v) for v in values]
    if not xs or sum(xs) == 0:
        return 0.0
    mean = sum(xs) / len(xs)
    return (sum((x - mean) ** 2 for x in xs) / len(xs)) ** 0.5 / mean


def documents(text: str) -> list[str]:
    """The blank-line separated documents of a text (NTREX: the same places in every language)."""
    return text.split("\n\n")


#: Sentences the page shows tokenized side by side.
SAMPLE_SENTENCES = 12


def sample_lines(texts: dict[str, str], reference: str, n: int = SAMPLE_SENTENCES) -> list[int]:
    """Up to ``n`` line numbers, spread over the texts, whose line is non-empty in every language
    and 40-200 characters long in the reference; ``[]`` unless the texts have equal line counts."""
    lines = {lang: text.split("\n") for lang, text in texts.items()}
    if reference not in lines or len({len(v) for v in lines.values()}) != 1:
        return []
    ref = lines[reference]
    good = [i for i, line in enumerate(ref) if 40 <= len(line) <= 200
            and all(v[i].strip() for v in lines.values())]
    if len(good) <= n:
        return good
    return [good[round(k * (len(good) - 1) / (n - 1))] for k in range(n)]


def sample_token_lengths(tok: Any, sentences: list[str]) -> Optional[list[str]]:
    """Each sentence's tokens as their UTF-8 byte lengths, ``"3,1,4"``; None when the tokens do not
    spell the sentence's own bytes (a normalizing tokenizer)."""
    out = []
    for sentence in sentences:
        pieces = tok.decode_tokens_bytes(tok.encode_ordinary(sentence))
        if b"".join(pieces) != sentence.encode("utf-8"):
            return None
        out.append(",".join(str(len(p)) for p in pieces))
    return out


def bootstrap_indices(n_docs: int, n: int = BOOTSTRAP, seed: int = BOOTSTRAP_SEED):
    """``n`` x ``n_docs`` resample weights: how often each document is drawn in each resample."""
    import numpy as np

    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_docs, size=(n, n_docs))
    weights = np.zeros((n, n_docs), dtype=np.int64)
    np.add.at(weights, (np.arange(n)[:, None], draws), 1)
    return weights


def _interval(samples, point: float, base: float) -> list[float]:
    """The 2.5 and 97.5 percentiles of ``samples`` (statistics of resamples whose unresampled value
    is ``base``), moved to the point estimate by the ratio point / base."""
    import numpy as np

    lo, hi = np.percentile(samples, [2.5, 97.5])
    scale = point / base if base else 1.0
    return [float(lo * scale), float(hi * scale)]


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
    training_mixes: Optional[dict[str, Optional[dict[str, int]]]] = None,
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
    each trained column took (both go into ``summary``). ``training_mixes``: per column, the
    UTF-8 bytes per language of its training text, when known (languages with none or little are
    flagged in the rows).

    On parallel texts that split into the same blank-line separated documents in every language
    (NTREX), the costs, premiums, Gini and CV get 95% percentile bootstrap intervals: the documents
    are resampled together (the same draw for every language and column, :data:`BOOTSTRAP`
    resamples, seed :data:`BOOTSTRAP_SEED`). ``baseline`` has the tokenizer-free UTF-8 figures:
    bytes per reference word, byte premium and character premium (Petrov et al. 2023).
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
    own_words = {lang: len(t.split()) for lang, t in texts.items()}
    spaced = {lang: languages.info(lang).spaced for lang in texts}
    premium_ok = is_parallel and reference in texts
    # documents for the bootstrap: the same number in every language (aligned), two or more
    docs = {lang: documents(t) for lang, t in texts.items()}
    n_docs = {len(d) for d in docs.values()}
    aligned = premium_ok and basis == "reference" and len(n_docs) == 1 and min(n_docs) >= 2
    weights = None
    if aligned:
        weights = bootstrap_indices(min(n_docs))
        ref_words = np.array([len(d.split()) for d in docs[reference]], dtype=np.float64)
        ref_boot = weights @ ref_words
    elif is_parallel:
        notes.append("no 95% intervals: the texts do not split into the same number (two or more) of "
                     "blank-line separated documents, so documents cannot be resampled together")
    mixes = dict(training_mixes or {})
    lines = sample_lines(texts, reference) if is_parallel else []
    samples: Optional[dict[str, Any]] = None
    if lines:
        samples = {"lines": lines, "text": {lang: [t.split("\n")[i] for i in lines] for lang, t in texts.items()},
                   "tokens": {}}
    results: dict[str, dict[str, dict[str, Any]]] = {}
    summary: dict[str, dict[str, Any]] = {}
    sample = _sample(texts, speed_mb)
    for name in variants:
        tok = tokenizers.get(name)
        pre = tok.pretokenizer if tok is not None else get_pretokenizer(name)
        if tok is None:
            notes.append(f"{name}: pre-tokenization figures only (no tokenizer trained or given for it), "
                         "so it is left out of every token plot and table")
        mix = mixes.get(name)
        rows = {}
        doc_tokens = {}
        for lang, text in texts.items():
            pieces = count_pieces(pre, text)
            row: dict[str, Any] = {"pieces": pieces, "pieces_per_word": pieces / words[lang],
                                   "bytes_per_piece": n_bytes[lang] / pieces if pieces else None,
                                   "tokens": None, "tokens_per_word": None, "fertility": None,
                                   "chars_per_token": None, "bytes_per_token": None, "premium": None}
            if tok is not None:
                n = tok.count(text)
                row.update(tokens=n, tokens_per_word=n / words[lang],
                           fertility=n / own_words[lang] if spaced[lang] and own_words[lang] else None,
                           chars_per_token=len(text) / n if n else None,
                           bytes_per_token=n_bytes[lang] / n if n else None,
                           training_bytes=None if mix is None else mix.get(lang, 0),
                           training_flag=training_flag(mix, lang))
                if weights is not None:
                    doc_tokens[lang] = np.array([tok.count(d) for d in docs[lang]], dtype=np.float64)
            rows[lang] = row
            step()
        summary_extra: dict[str, Any] = {}
        if tok is not None and samples is not None:
            lengths = {lang: sample_token_lengths(tok, samples["text"][lang]) for lang in texts}
            samples["tokens"][name] = {lang: v for lang, v in lengths.items() if v is not None}
        if tok is not None and premium_ok and rows[reference]["tokens"]:
            for row in rows.values():
                row["premium"] = row["tokens"] / rows[reference]["tokens"]
        if tok is not None and weights is not None:
            boots = {lang: weights @ doc_tokens[lang] for lang in texts}
            base = {lang: float(doc_tokens[lang].sum()) for lang in texts}
            ref_base = float(ref_words.sum())
            cost_boot = np.stack([boots[lang] / ref_boot for lang in texts], axis=1)  # resamples x langs
            for lang, row in rows.items():
                row["tokens_per_word_ci"] = _interval(boots[lang] / ref_boot, row["tokens_per_word"],
                                                      base[lang] / ref_base)
                row["premium_ci"] = _interval(boots[lang] / boots[reference], row["premium"],
                                              base[lang] / base[reference])
            gini_boot = [gini(r) for r in cost_boot]
            summary_extra["gini_ci"] = [float(x) for x in np.percentile(gini_boot, [2.5, 97.5])]
            summary_extra["cv_ci"] = [float(x) for x in np.percentile(
                [coefficient_of_variation(r) for r in cost_boot], [2.5, 97.5])]
        results[name] = rows
        speed = split_throughput(pre, sample)
        step()
        has_tokens = tok is not None
        others = {lang: r["premium"] for lang, r in rows.items() if r["premium"] is not None and lang != reference}
        worst = max(others, key=others.get) if others else None
        costs = [r["tokens_per_word"] for r in rows.values()] if has_tokens else []
        summary[name] = {
            "kind": (kinds or {}).get(name, "trained") if has_tokens else "pre-tokenizer",
            "tokenizer": getattr(tok, "name", None),
            "pretokenizer": pre.name,
            "n_vocab": tok.n_vocab if has_tokens else None,
            "gini": gini(costs) if has_tokens else None,
            "cv": coefficient_of_variation(costs) if has_tokens else None,
            "gini_ci": None, "cv_ci": None,
            "gini_pieces": gini(r["pieces_per_word"] for r in rows.values()),
            "mean_premium": sum(others.values()) / len(others) if others else None,
            "worst_premium": others[worst] if worst else None,
            "worst_language": worst,
            "mean_cost": sum(costs) / len(costs) if costs else None,
            "bytes_per_token": (sum(n_bytes.values()) / sum(r["tokens"] for r in rows.values())
                                if has_tokens else None),
            "training_mix": mix,
            "encode_mb_s": encode_throughput(tok, sample) if has_tokens else None,
            "train_seconds": (train_seconds or {}).get(name),
            **speed,
            **summary_extra,
        }
    baseline = {}
    if premium_ok:
        for lang in texts:
            baseline[lang] = {"bytes_per_word": n_bytes[lang] / words[lang],
                              "byte_premium": n_bytes[lang] / n_bytes[reference],
                              "char_premium": len(texts[lang]) / len(texts[reference])}
            if weights is not None:
                doc_bytes = np.array([len(d.encode("utf-8")) for d in docs[lang]], dtype=np.float64)
                ref_bytes = np.array([len(d.encode("utf-8")) for d in docs[reference]], dtype=np.float64)
                boot = weights @ doc_bytes
                baseline[lang]["bytes_per_word_ci"] = _interval(boot / ref_boot, baseline[lang]["bytes_per_word"],
                                                                doc_bytes.sum() / ref_words.sum())
                baseline[lang]["byte_premium_ci"] = _interval(boot / (weights @ ref_bytes),
                                                              baseline[lang]["byte_premium"],
                                                              doc_bytes.sum() / ref_bytes.sum())
    return {
        "cybpe_version": __version__,
        "reference": reference,
        "word_basis": basis,
        "parallel": is_parallel,
        "parallel_detected": detected,
        "languages": list(texts),
        "variants": list(variants),
        "texts": {lang: {"bytes": n_bytes[lang], "chars": len(texts[lang]), "words": words[lang],
                         "own_words": own_words[lang], "spaced": spaced[lang],
                         "documents": len(docs[lang]),
                         "name": languages.name(lang), "script": languages.info(lang).script,
                         "group": languages.info(lang).group,
                         "lines": texts[lang].count("\n"),
                         "sha256": hashlib.sha256(texts[lang].encode("utf-8")).hexdigest()}
                  for lang in texts},
        "baseline": baseline,
        "samples": samples,
        "bootstrap": ({"resamples": BOOTSTRAP, "seed": BOOTSTRAP_SEED, "documents": min(n_docs),
                       "unit": "blank-line separated documents, resampled together in every language"}
                      if weights is not None else None),
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


def vocab_size_label(n: Optional[int]) -> str:
    """``100k``, ``8.2k``, ``400``: a vocabulary size as a legend shows it."""
    if n is None:
        return ""
    if n >= 10_000:
        return f"{round(n / 1000)}k"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def column_label(report: dict[str, Any], name: str, long: bool = False) -> str:
    """The column as tables and legends name it: with its vocabulary size (and, ``long``, what it
    is: trained by this run, published, a file)."""
    s = report["summary"][name]
    size = vocab_size_label(s.get("n_vocab"))
    if not size:
        return name
    if not long:
        return f"{name} {size}"
    what = {"trained": ", trained here", "own": ", cybpe file", "file": ", file"}.get(s.get("kind"), "")
    return f"{name} ({size}{what})"


def language_order(report: dict[str, Any], columns: Optional[list[str]] = None) -> list[str]:
    """The languages by script group, then by mean cost (tokens per word, else pieces per word)
    over ``columns`` within the group."""
    columns = columns if columns is not None else report["variants"]
    with_tokens = [c for c in columns if all(report["results"][c][l]["tokens_per_word"] is not None
                                             for l in report["languages"])]
    metric = "tokens_per_word" if with_tokens else "pieces_per_word"
    cols = with_tokens or columns

    def cost(lang: str) -> float:
        values = [report["results"][c][lang][metric] for c in cols]
        return sum(values) / len(values) if values else 0.0

    return languages.ordered(report["languages"], cost)


FLAG_MARKS = {"none": " †", "little": " *"}


def language_cell(report: dict[str, Any], lang: str) -> str:
    t = report["texts"][lang]
    return f"{t.get('name', lang)} ({t.get('group', '?')})"


def metric_table(report: dict[str, Any], metric: str, markdown: bool = False) -> str:
    """Languages down (by script group, then cost), variants across, one metric; a value of a
    language with no (†) or little (*) training text in that column's training mix is marked."""
    if metric not in METRICS:
        raise InvalidParameterError(f"unknown metric {metric!r}; metrics: {', '.join(METRICS)}")
    header = ["lang", "language (script group)"] + [column_label(report, v) for v in report["variants"]]
    rows = []
    for lang in language_order(report):
        cells = [lang, language_cell(report, lang)]
        for v in report["variants"]:
            row = report["results"][v][lang]
            cells.append(_fmt(row[metric]) + (FLAG_MARKS.get(row.get("training_flag"), "")
                                              if row[metric] is not None else ""))
        rows.append(cells)
    return _table(header, rows, markdown)


def _ci(values: Optional[list[float]], digits: int = 3) -> str:
    return f"[{values[0]:.{digits}f}, {values[1]:.{digits}f}]" if values else "–"


def summary_table(report: dict[str, Any], markdown: bool = False) -> str:
    """Variants down: what they are, vocabulary size, absolute cost, bytes/token, premiums, Gini
    (with its 95% interval) beside the coefficient of variation, speed."""
    header = ["variant", "kind", "vocab", "mean cost", "bytes/token", "mean premium", "worst premium",
              "gini tokens", "gini 95% CI", "CV", "gini pieces", "encode MB/s", "training s",
              "split MB/s regex", "split MB/s compiled", "speedup"]
    rows = []
    for name in report["variants"]:
        s = report["summary"][name]
        ratio = s["compiled_mb_s"] / s["regex_mb_s"] if s["compiled_mb_s"] and s["regex_mb_s"] else None
        worst = (f"{s['worst_premium']:.2f} ({s['worst_language']})" if s.get("worst_premium") is not None
                 else "–")
        rows.append([name, s.get("kind") or "–", _fmt(s.get("n_vocab")), _fmt(s.get("mean_cost")),
                     _fmt(s.get("bytes_per_token")), _fmt(s["mean_premium"]), worst,
                     _fmt(s["gini"], 3), _ci(s.get("gini_ci")), _fmt(s.get("cv"), 3),
                     _fmt(s["gini_pieces"], 3), _fmt(s.get("encode_mb_s"), 1), _fmt(s.get("train_seconds"), 1),
                     _fmt(s["regex_mb_s"], 1), _fmt(s["compiled_mb_s"], 1),
                     f"{ratio:.0f}x" if ratio else "–"])
    return _table(header, rows, markdown)


def baseline_table(report: dict[str, Any], markdown: bool = False) -> str:
    """The tokenizer-free UTF-8 baseline per language: bytes per reference word, byte premium and
    character premium (Petrov et al. 2023), with the byte premium's 95% interval."""
    header = ["lang", "language (script group)", "bytes", "chars", "UTF-8 bytes per word",
              "byte premium", "byte premium 95% CI", "char premium"]
    rows = []
    for lang in language_order(report):
        b = report["baseline"].get(lang)
        t = report["texts"][lang]
        if not b:
            continue
        rows.append([lang, language_cell(report, lang), _fmt(t["bytes"]), _fmt(t["chars"]),
                     _fmt(b["bytes_per_word"]), _fmt(b["byte_premium"]), _ci(b.get("byte_premium_ci"), 2),
                     _fmt(b["char_premium"])])
    return _table(header, rows, markdown)


def training_mix_table(report: dict[str, Any], markdown: bool = False) -> Optional[str]:
    """UTF-8 bytes per language of each known training mix (columns that share one are merged),
    the report's languages first; None when no column's mix is known."""
    mixes: dict[str, dict[str, int]] = {}
    names: dict[str, list[str]] = {}
    for name in report["variants"]:
        mix = report["summary"][name].get("training_mix")
        if mix:
            key = repr(sorted(mix.items()))
            mixes.setdefault(key, mix)
            names.setdefault(key, []).append(name)
    if not mixes:
        return None
    keys = list(mixes)
    shown = language_order(report)
    extra = sorted({lang for m in mixes.values() for lang in m} - set(shown),
                   key=lambda lang: -max(m.get(lang, 0) for m in mixes.values()))
    header = ["lang", "language"] + [", ".join(names[k]) for k in keys]
    rows = []
    for lang in shown + extra:
        flag = [FLAG_MARKS.get(training_flag(mixes[k], lang), "") for k in keys]
        rows.append([lang, languages.name(lang)] +
                    [f"{mixes[k].get(lang, 0) / 1e6:.3f} MB{f}" for k, f in zip(keys, flag)])
    rows.append(["all", ""] + [f"{sum(mixes[k].values()) / 1e6:.3f} MB" for k in keys])
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
