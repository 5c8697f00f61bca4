"""The report's figures (matplotlib, optional): one dot plot per metric and group of columns.

A dot plot rather than grouped bars: with 25 languages and up to a dozen columns, bars become
slivers; one row per language (sorted by the metric, so the order itself reads as a ranking)
with one marker per column stays legible, and a log axis keeps the few languages that barely
appear in training from flattening the rest. Every figure carries its title; the caption (what
was measured on what) is returned with it so the HTML page and the README can print it.

Internal: the public API is the top-level ``cybpe`` package.
"""

from __future__ import annotations

import io
from typing import Any, Optional

from cybpe.report.metrics import DEFINITIONS

#: Which columns a figure shows: trained variants and real vocabularies apart (they differ in
#: vocabulary size and training data as well as in the pre-tokenizer, so they get their own panel).
GROUPS = (("trained", "trained variants"), ("vocabulary", "real vocabularies"),
          ("pre-tokenizer", "pre-tokenizers"))
#: Figures a report draws, in order; ``premium`` gets a reference line at 1.
FIGURE_METRICS = ("tokens_per_word", "premium", "chars_per_token", "pieces_per_word")
MARKERS = "osD^vP*Xhp<>"


def metric_label(report: dict[str, Any], metric: str) -> str:
    """The axis label of ``metric``, with the word basis spelled out for per-word figures."""
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


def figure_plan(report: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """``(metric, group title, columns)`` for every figure worth drawing. Pieces per word is
    drawn for the columns without a real vocabulary (their splits are what is compared)."""
    plan = []
    for metric in FIGURE_METRICS:
        for kind, title in GROUPS:
            if metric == "pieces_per_word":
                if kind == "vocabulary":
                    continue
                cols = [c for c in columns_with(report, metric) if report["summary"][c]["kind"] != "vocabulary"]
                if kind == "pre-tokenizer" or not cols:
                    continue
                plan.append((metric, "pre-tokenizers", cols))
                continue
            cols = columns_with(report, metric, kind)
            if cols:
                plan.append((metric, title, cols))
    return plan


def wants_log(report: dict[str, Any], metric: str, columns: list[str], log: bool) -> bool:
    """``log`` where it helps: values spread over more than a factor of 3 (a narrower range on a
    log axis gets one tick or none)."""
    values = [report["results"][c][lang][metric] for c in columns for lang in report["languages"]]
    return log and min(values) > 0 and max(values) / min(values) > 3


def caption(report: dict[str, Any], metric: str, columns: list[str], log: bool) -> str:
    """One paragraph: what the figure shows, on which texts, with which vocabularies."""
    n = len(report["languages"])
    parts = [f"{DEFINITIONS[metric][0].capitalize()}: {DEFINITIONS[metric][1]}."]
    parts.append(f"{n} languages ({'parallel texts' if report['parallel'] else 'texts that are NOT parallel'}"
                 f"{', ' + report['text_set'] if report.get('text_set') else ''}), sorted by the mean over "
                 f"the {len(columns)} column{'s' if len(columns) != 1 else ''} shown.")
    if "per word" in DEFINITIONS[metric][0]:
        parts.append(f"Words: the whitespace words of the {report['reference']} text, the same number for every "
                     "language (same content), so scripts without spaces compare too."
                     if report["word_basis"] == "reference" else "Words: each text's own whitespace words.")
    training = report.get("training")
    kinds = {report["summary"][c]["kind"] for c in columns}
    if training and "trained" in kinds and metric != "pieces_per_word":
        parts.append(f"Trained variants: one {training['vocab_size']}-token vocabulary per pre-tokenizer, "
                     f"trained on the first {training['bytes'] / 1e6:.1f} MB of {training['corpus_name']}.")
    if "vocabulary" in kinds:
        parts.append("Real vocabularies differ in size and training data as well as in pre-tokenizer.")
    if metric == "premium":
        parts.append(f"The line at 1 is what {report['reference']} costs.")
    if wants_log(report, metric, columns, log):
        parts.append("Log axis.")
    return " ".join(parts)


def figure_title(report: dict[str, Any], metric: str, group: str) -> str:
    """``Metric: group`` and, for trained variants, the vocabulary size and training size."""
    title = f"{DEFINITIONS[metric][0].capitalize()}: {group}"
    training = report.get("training")
    if group == "trained variants" and training:
        title += f" ({training['vocab_size']} tokens, {training['bytes'] / 1e6:.1f} MB of {training['corpus_name']})"
    return title


def draw(report: dict[str, Any], metric: str, columns: list[str], title: str, *, log: bool = False,
         fmt: str = "png") -> bytes:
    """The figure of ``metric`` for ``columns`` as PNG (or SVG) bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = report["results"]
    langs = sorted(report["languages"],
                   key=lambda lang: sum(results[c][lang][metric] for c in columns) / len(columns))
    height = max(3.0, 0.28 * len(langs) + 1.6)
    fig, ax = plt.subplots(figsize=(8.0, height))
    colors = plt.get_cmap("tab10" if len(columns) <= 10 else "tab20").colors
    spread = min(0.6, 0.12 * (len(columns) - 1))  # each column a little apart: equal values stay visible
    for k, name in enumerate(columns):
        offset = spread * (k / (len(columns) - 1) - 0.5) if len(columns) > 1 else 0.0
        ax.plot([results[name][lang][metric] for lang in langs], [i - offset for i in range(len(langs))],
                linestyle="none",
                marker=MARKERS[k % len(MARKERS)], markersize=6, alpha=0.85, color=colors[k % len(colors)],
                label=name)
    ax.set_yticks(range(len(langs)), langs)
    ax.set_ylim(-0.7, len(langs) - 0.3)
    ax.grid(axis="x", alpha=0.3, which="both")
    ax.grid(axis="y", alpha=0.15)
    if wants_log(report, metric, columns, log):  # plain numbers at 1-2-5 steps: "2 x 10^0" is not how a reader says 2
        from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    if metric == "premium":
        ax.axvline(1.0, color="black", linewidth=1, linestyle="--", label=f"1 = {report['reference']}'s cost")
    ax.set_xlabel(metric_label(report, metric))
    ax.set_title(figure_title(report, metric, title), fontsize=11)
    ax.legend(fontsize="small", loc="lower right", framealpha=0.9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=100)
    plt.close(fig)
    return buf.getvalue()
