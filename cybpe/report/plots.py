"""The report's figures (matplotlib, optional), drawn for a paper: vector (SVG, PDF) beside PNG.

* **Cost and premium** (the main figure): two panels sharing the language axis, (a) the absolute
  cost, tokens per English-word equivalent, and (b) the premium over the reference language, both
  on log axes, with 95% bootstrap intervals over documents when the texts have them. Languages are
  grouped by script (a rule between groups, the group named at the right) and ordered by cost
  within a group. Every tokenizer has its own colour (Okabe-Ito, safe for colour-blind readers) and
  marker, and its markers are dodged vertically so equal values stay visible; two columns with the
  same counts everywhere (one vocabulary under two names) are drawn once. A hollow marker is a
  language with no (or under 100 kB of) training text for that tokenizer. The UTF-8 byte baseline
  (one token per byte) is drawn as a grey bar in each row.
* **Per tokenizer**: Gini of the costs with its interval and the coefficient of variation beside
  it, bytes per token over all languages, encode MB/s.
* **Pieces per word** of each pre-tokenizer, the same layout as the cost panel.

Sizes: 7 inches wide (a two-column figure; the per-tokenizer figure also fits one column at 3.4),
8-point text, PNG at 300 dpi.

Internal: the public API is the top-level ``cybpe`` package.
"""

from __future__ import annotations

import io
from typing import Any, Optional

from cybpe.report import languages
from cybpe.report.metrics import DEFINITIONS
from cybpe.report.variants import column_label, language_order

#: Okabe & Ito's colour-blind-safe palette, the yellow last (weak on white).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
MARKERS = "os^Dv<>PXph*"
DPI = 300
FONT = 8
#: Token columns drawn in one cost/premium figure (the palette without its yellow); more are split by kind.
MAX_COLUMNS = 7
FORMATS = ("png", "svg", "pdf")
#: Kept for ``--plot``: figures a report drew before (one metric per figure).
FIGURE_METRICS = ("tokens_per_word", "premium", "pieces_per_word")
KIND_TITLES = {"trained": "trained by this run", "own": "trained with cybpe", "vocabulary": "published vocabularies",
               "file": "tokenizer files", "pre-tokenizer": "pre-tokenizers"}


def metric_label(report: dict[str, Any], metric: str) -> str:
    """The axis label of ``metric``, with the word basis spelled out for per-word figures."""
    if metric == "tokens_per_word" and report["word_basis"] == "reference":
        return f"tokens per {report['reference']}-word equivalent\n(absolute cost; lower is better)"
    if metric == "premium":
        return f"tokens / the same tokenizer's {report['reference']} tokens\n(1 = parity; hides the {report['reference']} cost)"
    label = DEFINITIONS[metric][0]
    if "per word" in label:
        label += (f"; words: those of the {report['reference']} text (same content)"
                  if report["word_basis"] == "reference" else "; words: each text's own")
    return label


def columns_with(report: dict[str, Any], metric: str, kind: Optional[str] = None) -> list[str]:
    """Columns with a value of ``metric`` for every language (and of ``kind`` when given)."""
    out = []
    for name in report["variants"]:
        rows = report["results"][name]
        if kind is not None and report["summary"][name]["kind"] != kind:
            continue
        if all(rows[lang][metric] is not None for lang in report["languages"]):
            out.append(name)
    return out


def distinct_columns(report: dict[str, Any], columns: list[str]) -> list[tuple[str, list[str]]]:
    """``(column drawn, columns it stands for)``: columns with the same token count in every
    language (one vocabulary under two names, such as o200k_base and GPT-4o) are drawn once."""
    seen: dict[tuple, list[str]] = {}
    for c in columns:
        key = tuple(report["results"][c][lang]["tokens"] for lang in report["languages"])
        seen.setdefault(key, []).append(c)
    return [(names[0], names) for names in seen.values()]


def legend_label(report: dict[str, Any], names: list[str]) -> str:
    first = column_label(report, names[0], long=True)
    return first if len(names) == 1 else " = ".join(names[:-1]) + f" = {first.replace(names[0], names[-1], 1)}"


def figure_plan(report: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """``(figure, title, columns)`` for every figure worth drawing: ``cost`` (cost and premium, one
    per group of kinds when there are more than :data:`MAX_COLUMNS` columns), ``tokenizers`` (per
    tokenizer) and ``pieces`` (pre-tokenizers)."""
    plan = []
    token_cols = columns_with(report, "tokens_per_word")
    if token_cols:
        if len(distinct_columns(report, token_cols)) <= MAX_COLUMNS:
            plan.append(("cost", "every tokenizer", token_cols))
        else:
            trained = [c for c in token_cols if report["summary"][c]["kind"] in ("trained", "own")]
            others = [c for c in token_cols if c not in trained]
            for cols, title in ((trained, "tokenizers trained with cybpe"), (others, "published vocabularies and files")):
                if cols:
                    plan.append(("cost", title, cols))
        plan.append(("tokenizers", "per tokenizer", token_cols))
    piece_cols = [c for c in columns_with(report, "pieces_per_word") if report["summary"][c]["kind"]
                  in ("trained", "pre-tokenizer")]
    if piece_cols:
        plan.append(("pieces", "pre-tokenizers", piece_cols))
    return plan


def _training_note(report: dict[str, Any]) -> str:
    training = report.get("training")
    if not training:
        return ""
    return (f"trained here: {training['vocab_size']:,} tokens on the first {training['bytes'] / 1e6:.1f} MB "
            f"of {training['corpus_name']}")


def figure_title(report: dict[str, Any], figure: str, group: str, columns: Optional[list[str]] = None) -> str:
    """The figure's title: what, for which columns, on which texts."""
    what = {"cost": "Cost per English-word equivalent and premium", "tokenizers": "Inequality, compression and speed",
            "pieces": "Pre-tokenization pieces per word"}.get(figure, DEFINITIONS.get(figure, (figure,))[0].capitalize())
    title = f"{what}: {group}"
    note = _training_note(report)
    if note and figure in ("cost", "tokenizers") and any(report["summary"][c]["kind"] == "trained"
                                                          for c in (columns or report["variants"])):
        title += f" ({note})"
    return title


def caption(report: dict[str, Any], figure: str, columns: list[str], log: bool = True) -> str:
    """One paragraph: what the figure shows, on which texts, with which tokenizers."""
    n = len(report["languages"])
    texts = (f"{n} languages ({'parallel texts' if report['parallel'] else 'texts that are NOT parallel'}"
             f"{', ' + report['text_set'] if report.get('text_set') else ''})")
    boot = report.get("bootstrap")
    bars = (f"Bars: 95% bootstrap intervals over the {boot['documents']} documents." if boot
            else "No intervals (the texts do not split into aligned documents).")
    if figure == "cost":
        parts = [f"(a) {DEFINITIONS['tokens_per_word'][1]}; (b) {DEFINITIONS['premium'][1]}.",
                 f"{texts}, grouped by script and ordered by mean cost within a group; log axes.", bars,
                 "Grey bars: the UTF-8 byte baseline (a tokenizer emitting one token per byte).",
                 "Hollow markers: no or under 100 kB of training text in that language for that tokenizer.",
                 "Vocabulary sizes in the legend."]
    elif figure == "tokenizers":
        parts = [f"(a) {DEFINITIONS['gini'][1]}; vertical bars: {DEFINITIONS['cv'][1]}.",
                 "(b) UTF-8 bytes / tokens over all languages' texts together.",
                 f"(c) {DEFINITIONS['encode_mb_s'][1]} (indicative: this machine, shared or not).", texts + ".",
                 bars if boot else ""]
    else:
        parts = [f"{DEFINITIONS['pieces_per_word'][1]}.", f"{texts}, grouped by script."]
    note = _training_note(report)
    if note and any(report["summary"][c]["kind"] == "trained" for c in columns):
        parts.append(note[0].upper() + note[1:] + ".")
    return " ".join(p for p in parts if p)


def _style():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": FONT, "axes.titlesize": FONT + 1, "axes.labelsize": FONT,
                         "legend.fontsize": FONT - 0.5, "xtick.labelsize": FONT - 0.5,
                         "ytick.labelsize": FONT - 0.5, "svg.fonttype": "none", "pdf.fonttype": 42,
                         "font.family": "DejaVu Sans"})
    return plt


def _log_axis(ax) -> None:
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _rows(ax, report: dict[str, Any], langs: list[str]) -> None:
    """Language tick labels, a rule between script groups, the group name at the right."""
    ax.set_yticks(range(len(langs)), [f"{report['texts'][l].get('name', l)} ({l})" for l in langs])
    ax.set_ylim(len(langs) - 0.5, -0.5)
    groups = [languages.info(l).group for l in langs]
    start = 0
    for i in range(1, len(langs) + 1):
        if i == len(langs) or groups[i] != groups[start]:
            if i < len(langs):
                ax.axhline(i - 0.5, color="#999999", linewidth=0.6)
            ax.text(1.005, (start + i - 1) / 2, groups[start], transform=ax.get_yaxis_transform(),
                    va="center", ha="left", fontsize=FONT - 1.5, color="#555555")
            start = i
    ax.grid(axis="x", alpha=0.3, which="major", linewidth=0.5)


def _dodge(k: int, n: int) -> float:
    """Vertical offset of column ``k`` of ``n`` inside a row: at most 0.6 of the row in all."""
    return 0.0 if n == 1 else min(0.6, 0.15 * (n - 1)) * (k / (n - 1) - 0.5)


def _panel(ax, report: dict[str, Any], metric: str, drawn: list[tuple[str, list[str]]], langs: list[str],
           baseline: Optional[str], flags: bool = True, plain_labels: bool = False) -> list:
    handles = []
    n = len(drawn)
    if baseline and report.get("baseline"):
        for i, lang in enumerate(langs):
            value = report["baseline"][lang][baseline]
            ax.plot([value, value], [i - 0.42, i + 0.42], color="#aaaaaa", linewidth=2.2, solid_capstyle="butt",
                    zorder=1)
    for k, (name, names) in enumerate(drawn):
        color, marker = PALETTE[k % len(PALETTE)], MARKERS[k % len(MARKERS)]
        rows = report["results"][name]
        ys = [i + _dodge(k, n) for i in range(len(langs))]
        xs = [rows[l][metric] for l in langs]
        cis = [rows[l].get(f"{metric}_ci") for l in langs]
        if all(cis):
            ax.errorbar(xs, ys, xerr=[[x - c[0] for x, c in zip(xs, cis)], [c[1] - x for x, c in zip(xs, cis)]],
                        fmt="none", ecolor=color, elinewidth=0.8, capsize=0, zorder=2)
        flagged = [flags and rows[l].get("training_flag") is not None for l in langs]
        full = [(x, y) for x, y, f in zip(xs, ys, flagged) if not f]
        hollow = [(x, y) for x, y, f in zip(xs, ys, flagged) if f]
        h = ax.plot([p[0] for p in full], [p[1] for p in full], linestyle="none", marker=marker, markersize=3.6,
                    color=color, markeredgewidth=0.6, zorder=3,
                    label=names[0] if plain_labels else legend_label(report, names))[0]
        if hollow:
            ax.plot([p[0] for p in hollow], [p[1] for p in hollow], linestyle="none", marker=marker, markersize=3.6,
                    markerfacecolor="white", markeredgecolor=color, markeredgewidth=0.9, zorder=3)
        handles.append(h)
    _log_axis(ax)
    return handles


def _save(fig) -> dict[str, bytes]:
    out = {}
    for fmt in FORMATS:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=DPI, bbox_inches="tight", metadata={"Date": None} if fmt in ("svg", "pdf")
                    else None)
        out[fmt] = buf.getvalue()
    return out


def draw_cost(report: dict[str, Any], columns: list[str], title: str) -> dict[str, bytes]:
    """The two-panel cost / premium figure as ``{"png", "svg", "pdf"}`` bytes."""
    plt = _style()
    from matplotlib.lines import Line2D

    drawn = distinct_columns(report, columns)
    langs = language_order(report, columns)
    has_premium = all(report["results"][c][l]["premium"] is not None for c in columns for l in langs)
    height = 0.19 * len(langs) + 1.9 + 0.16 * ((len(drawn) + 1) // 2)
    fig, axes = plt.subplots(1, 2 if has_premium else 1, figsize=(7.0, height), sharey=True, squeeze=False)
    axes = axes[0]
    handles = _panel(axes[0], report, "tokens_per_word", drawn, langs, "bytes_per_word")
    _rows(axes[0], report, langs)
    axes[0].set_xlabel(metric_label(report, "tokens_per_word"))
    axes[0].set_title("(a) cost per English-word equivalent" if report["word_basis"] == "reference" else "(a) cost")
    if has_premium:
        _panel(axes[1], report, "premium", drawn, langs, "byte_premium")
        _rows(axes[1], report, langs)
        axes[1].tick_params(axis="y", labelleft=False)
        axes[1].axvline(1.0, color="black", linewidth=0.7, linestyle="--", zorder=1)
        axes[1].set_xlabel(metric_label(report, "premium"))
        axes[1].set_title("(b) premium")
        for t in axes[0].texts:  # the group names once, at the right of the right panel
            t.set_visible(False)
    extra = [Line2D([], [], color="#aaaaaa", linewidth=2.2, label="UTF-8 bytes (1 token per byte)")]
    if any(report["results"][c][l].get("training_flag") for c in columns for l in langs):
        extra.append(Line2D([], [], linestyle="none", marker="o", markerfacecolor="white", markeredgecolor="#444444",
                            markersize=3.6, label="hollow: no / little training text"))
    fig.legend(handles=handles + extra, loc="lower center", ncol=2, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title, fontsize=FONT + 1)
    fig.tight_layout(rect=(0, 0.16 * ((len(handles) + len(extra) + 1) // 2) / height + 0.01, 1, 1))
    out = _save(fig)
    plt.close(fig)
    return out


def draw_tokenizers(report: dict[str, Any], columns: list[str], title: str) -> dict[str, bytes]:
    """Gini (interval, CV beside it), bytes per token, encode MB/s: one row per tokenizer."""
    plt = _style()
    drawn = distinct_columns(report, columns)
    labels = [legend_label(report, names) for _, names in drawn]
    summaries = [report["summary"][name] for name, _ in drawn]
    height = 0.24 * len(drawn) + 1.3
    fig, axes = plt.subplots(1, 3, figsize=(7.0, height), sharey=True,
                             gridspec_kw={"width_ratios": [1.3, 1, 1]})
    ys = list(range(len(drawn)))
    colors = [PALETTE[k % len(PALETTE)] for k in range(len(drawn))]
    ax = axes[0]
    for y, s, c, k in zip(ys, summaries, colors, range(len(drawn))):
        if s.get("gini_ci"):
            ax.plot(s["gini_ci"], [y - 0.12, y - 0.12], color=c, linewidth=0.9)
        ax.plot([s["gini"]], [y - 0.12], marker=MARKERS[k % len(MARKERS)], color=c, markersize=4, linestyle="none")
        ax.plot([s["cv"]], [y + 0.15], marker="|", color=c, markersize=6, markeredgewidth=1.4, linestyle="none")
    ax.set_xlim(left=0)
    ax.set_xlabel("Gini (markers, 95% CI) and CV (|)\nof the languages' costs")
    ax.set_title("(a) inequality")
    ax = axes[1]
    ax.barh(ys, [s["bytes_per_token"] for s in summaries], color=colors, height=0.6)
    ax.set_xlabel("UTF-8 bytes per token\n(all languages together)")
    ax.set_title("(b) compression")
    ax = axes[2]
    speeds = [s.get("encode_mb_s") or 0 for s in summaries]
    ax.barh(ys, speeds, color=colors, height=0.6)
    ax.set_xlabel("encode MB/s (indicative)")
    ax.set_title("(c) speed")
    axes[0].set_yticks(ys, labels)
    axes[0].set_ylim(len(drawn) - 0.5, -0.5)
    for ax in axes:
        ax.grid(axis="x", alpha=0.3, linewidth=0.5)
    fig.suptitle(title, fontsize=FONT + 1)
    fig.tight_layout()
    out = _save(fig)
    plt.close(fig)
    return out


def draw(report: dict[str, Any], metric: str, columns: list[str], title: str, *, log: bool = False,
         fmt: str = "png") -> bytes:
    """One metric, one panel, languages by script group then value (``--plot``); ``fmt`` one of
    :data:`FORMATS`."""
    plt = _style()
    drawn = [(c, [c]) for c in columns]
    langs = language_order(report, columns) if metric != "pieces_per_word" else languages.ordered(
        report["languages"], lambda l: sum(report["results"][c][l][metric] for c in columns))
    height = 0.19 * len(langs) + 1.6 + 0.16 * ((len(drawn) + 1) // 2)
    fig, ax = plt.subplots(figsize=(7.0 if len(columns) > 3 else 4.6, height))
    baseline = {"tokens_per_word": "bytes_per_word", "premium": "byte_premium"}.get(metric)
    pieces = metric in ("pieces_per_word", "bytes_per_piece")
    handles = _panel(ax, report, metric, drawn, langs, baseline, flags=not pieces, plain_labels=pieces)
    if not log and metric not in ("tokens_per_word", "premium"):
        ax.set_xscale("linear")
    _rows(ax, report, langs)
    if metric == "premium":
        ax.axvline(1.0, color="black", linewidth=0.7, linestyle="--")
    ax.set_xlabel(metric_label(report, metric))
    ax.set_title(title)
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.08 - 0.4 / height), ncol=2,
              frameon=False)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def figures(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every figure of :func:`figure_plan`: ``{"figure", "title", "caption", "columns", "file"
    (the stem), "png", "svg", "pdf"}``."""
    out = []
    for n, (figure, group, columns) in enumerate(figure_plan(report), 1):
        title = figure_title(report, figure, group, columns)
        if figure == "cost":
            data = draw_cost(report, columns, title)
        elif figure == "tokenizers":
            data = draw_tokenizers(report, columns, title)
        else:
            data = {fmt: draw(report, "pieces_per_word", columns, title, fmt=fmt) for fmt in FORMATS}
        out.append({"figure": figure, "title": title, "caption": caption(report, figure, columns),
                    "columns": columns, "file": f"fig{n}-{figure}", **data})
    return out
