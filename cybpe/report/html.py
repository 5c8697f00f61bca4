"""``cybpe bench --report DIR``: one folder with ``index.html``, ``report.json`` and ``report.md``.

The page is self-contained and works offline: CSS inline, figures as inline PNG (base64 data
URIs; the SVG and PDF files are beside it), nothing fetched. Every output starts with the settings (texts and their
sha256, vocabulary size, training corpus, word basis, versions, the command line), so a table
can be reproduced from the file it is in.

Internal: the public API is the top-level ``cybpe`` package.
"""

from __future__ import annotations

import base64
import html
import json
import os
from pathlib import Path
from typing import Any, Optional

from cybpe.io.atomic import atomic_write_bytes
from cybpe.report.explore import SCRIPT
from cybpe.report.metrics import DEFINITIONS, LITERATURE
from cybpe.report.variants import (FLAG_MARKS, available_metrics, baseline_table, column_label,
                                   language_cell, language_order, metric_table, render, training_mix_table)

CSS = """
body { font: 15px/1.45 system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 2px 7px; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; } figure { margin: 1.2em 0 2em; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 13px; color: #444; max-width: 800px; }
.warn { background: #fff4d6; border-left: 4px solid #e0a800; padding: .4em .8em; }
code, pre { font-size: 12.5px; background: #f6f6f6; } pre { padding: .6em; overflow-x: auto; white-space: pre-wrap; }
th.sort { cursor: pointer; } th[data-dir=asc]::after { content: " \\25B2"; } th[data-dir=desc]::after { content: " \\25BC"; }
#explore fieldset { border: 1px solid #ccc; margin: .4em 0; font-size: 13px; }
#explore label { display: inline-block; margin: 0 .7em .2em 0; white-space: nowrap; }
#explore .group { margin: .15em 0; } #explore .group b { display: inline-block; min-width: 9em; }
#explore button { font-size: 11px; margin-right: .4em; } #explore-status { color: #555; font-size: 13px; }
#explore-chart svg { max-width: 100%; height: auto; } .legend { font-size: 12px; }
table.tokens th { text-align: left; white-space: nowrap; font-weight: normal; }
.tok { border: 1px solid #888; border-radius: 2px; padding: 0 1px; margin: 0 1px 2px 0; display: inline-block;
       white-space: pre; line-height: 1.5; } .t0 { background: #dbeafe; } .t1 { background: #fde8c8; }
.partial { font-family: monospace; font-size: 11px; color: #a00; background: #fff; border: 1px dashed #a00; padding: 0 1px; }
p.source { font-size: 15px; }
"""


KIND_WORDS = {"trained": "trained by this run", "own": "trained with cybpe, from a file",
              "vocabulary": "published vocabulary", "file": "tokenizer file"}


def settings(report: dict[str, Any]) -> list[tuple[str, str]]:
    """``(name, value)`` rows saying how the report was made."""
    rows = [("command", report.get("command_line", "")), ("rerun with", report.get("reproduce", "")),
            ("working directory", report.get("cwd", "")),
            ("texts", f"{len(report['languages'])} languages, {report.get('text_set', '')}"),
            ("parallel", f"{'yes' if report['parallel'] else 'no'} ({report.get('parallel_reason', '')})"),
            ("word basis", report["word_basis"] + (f" (words of {report['reference']!r})"
                                                   if report["word_basis"] == "reference" else " (each text's own)")),
            ("reference language", report["reference"])]
    training = report.get("training")
    if training:
        rows += [("vocabulary size", str(training["vocab_size"])),
                 ("training corpus", f"{training['corpus']}: first {training['bytes']:,} bytes "
                                     f"({training['bytes'] / 1e6:.1f} MB, {training['chars']:,} chars), "
                                     f"sha256 {training['sha256']}")]
    for label, vocab in report.get("vocabularies", {}).items():
        kind = vocab.get("kind", "")
        rows.append((f"vocabulary {label}", f"{vocab['file']} ({vocab.get('n_vocab', '?')} tokens; "
                                            f"{KIND_WORDS.get(kind, kind)}; sha256 {vocab['sha256']})"))
    boot = report.get("bootstrap")
    if boot:
        rows.append(("intervals", f"95% percentile bootstrap, {boot['resamples']} resamples (seed {boot['seed']}) "
                                  f"of the {boot['documents']} {boot['unit']}"))
    versions = report.get("versions", {})
    rows.append(("versions", ", ".join(f"{k} {v}" for k, v in versions.items()) or report["cybpe_version"]))
    rows.append(("throughput sample", f"{report['speed_sample_bytes']:,} bytes (MB/s are of this machine, "
                                      "shared or not: indicative)"))
    return rows


def markdown(report: dict[str, Any]) -> str:
    """The report as markdown: settings, notes, tables of every metric present, definitions."""
    out = ["# cybpe bench report", ""]
    out += [f"- **{name}**: `{value}`" if name in ("command", "rerun with") else f"- **{name}**: {value}"
            for name, value in settings(report)]
    out.append("")
    out += [f"- **warning**: {w}" for w in report["warnings"]]
    out += [f"- note: {n}" for n in report["notes"]]
    out += ["", render(report, available_metrics(report), markdown=True)]
    if report.get("baseline"):
        out += ["**UTF-8 baseline** (tokenizer-free)", "", baseline_table(report, markdown=True), ""]
    mix = training_mix_table(report, markdown=True)
    if mix:
        out += ["**training mix** (UTF-8 bytes per language; † none, * under 100 kB)", "", mix, ""]
    out += ["**texts**", "", "| lang | bytes | chars | words | lines | sha256 |", "|---|---:|---:|---:|---:|---|"]
    out += [f"| {lang} | {t['bytes']} | {t['chars']} | {t['words']} | {t['lines']} | `{t['sha256']}` |"
            for lang, t in report["texts"].items()]
    out += ["", "**definitions**", ""] + [f"- `{name}`: {text}" for name, (_label, text) in DEFINITIONS.items()]
    out += ["", "**sources of the measures' names**", ""] + [f"- {name}: {text}" for name, text in LITERATURE.items()]
    return "\n".join(out) + "\n"


def _numeric(cell: str) -> bool:
    cell = cell.strip()
    return bool(cell) and (cell[0].isdigit() or cell[0] in "–-[")


def _html_table(text_table: str) -> str:
    """A markdown table (from :mod:`cybpe.report.variants`) as an HTML table."""
    lines = [line.strip().strip("|").split("|") for line in text_table.strip().splitlines()]
    header, rows = lines[0], lines[2:]
    head = "".join(f"<th>{html.escape(c.strip())}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td{' class=n' if i and _numeric(c) else ''}>{html.escape(c.strip())}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table class=sortable><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cost_cell(row: dict[str, Any], metric: str, digits: int = 2) -> str:
    value = row.get(metric)
    if value is None:
        return "–"
    ci = row.get(f"{metric}_ci")
    text = f"{value:.{digits}f}" + (f" ({ci[0]:.{digits}f}–{ci[1]:.{digits}f})" if ci else "")
    return text + FLAG_MARKS.get(row.get("training_flag"), "")


def _ci_table(report: dict[str, Any], metric: str, columns: list[str]) -> str:
    """Languages down (script group, then cost), tokenizers across: value (95% interval)."""
    esc = html.escape
    head = "<th>lang</th><th>language (script group)</th>" + "".join(
        f"<th>{esc(column_label(report, c))}</th>" for c in columns)
    body = []
    for lang in language_order(report, columns):
        cells = "".join(f"<td class=n>{esc(_cost_cell(report['results'][c][lang], metric))}</td>" for c in columns)
        body.append(f"<tr><td>{esc(lang)}</td><td>{esc(language_cell(report, lang))}</td>{cells}</tr>")
    return f"<table class=sortable><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _glossary(report: dict[str, Any]) -> str:
    esc = html.escape
    ref = esc(report["reference"])
    return (
        "<h2>How to read this report</h2><ul>"
        f"<li><b>Cost</b> (tokens per {'English-word equivalent' if report['word_basis'] == 'reference' else 'word'}): "
        f"tokens of a language's text / whitespace words of the {ref} text with the same content. The "
        "absolute figure: it says what a language costs, including what the reference itself costs.</li>"
        f"<li><b>Premium</b> (Petrov et al. 2023): tokens of a language / tokens of the {ref} text with the "
        f"same tokenizer; 1 = costs what {ref} costs. A premium of 1 everywhere can mean that {ref} got worse: "
        "read it beside the cost.</li>"
        "<li><b>Fertility</b> (Rust et al. 2021): tokens per whitespace word of the language itself; only "
        "for languages that separate words with spaces (not zh, ja, th, lo, km, my, bo, dz).</li>"
        "<li><b>Byte and character premiums</b>: the same ratio for UTF-8 bytes and for code points, with "
        "no tokenizer: a tokenizer that emits one token per byte has the byte premium (the UTF-8 baseline).</li>"
        "<li><b>Gini</b>: Gini coefficient of the languages' costs for one tokenizer (0 = every language "
        "costs the same). It measures relative spread only: a tokenizer cheaper in every language can have "
        "the higher Gini, so it is shown with a second measure, the coefficient of variation (CV = standard "
        "deviation / mean), the worst premium and the mean cost.</li>"
        "<li><b>Chars and bytes per token</b> compare tokenizers on one language; a character or a byte is "
        "a different amount of text in each script, so these are not ranked across languages.</li>"
        "<li>Languages are listed by script group, then by cost within the group. Values marked † come "
        "from a tokenizer whose training text had none of that language, * under 100 kB.</li>"
        "<li>Intervals: 95% bootstrap over documents (resampled together in every language).</li></ul>")


def explore_data(report: dict[str, Any]) -> Optional[dict[str, Any]]:
    """What the page's script needs: languages (script order), token columns with their token
    counts and training flags, the sample sentences; None without token columns or parallel texts."""
    from cybpe.report import languages as langs

    columns = [c for c in report["variants"] if report["summary"][c]["n_vocab"] is not None]
    if not columns or not report["parallel"]:
        return None
    order = language_order(report, columns)
    return {
        "reference": report["reference"],
        "languages": [{"code": l, "name": report["texts"][l].get("name", l), "group": report["texts"][l].get("group", "other"),
                       "rank": langs.group_rank(l), "words": report["texts"][l].get("own_words", report["texts"][l]["words"])}
                      for l in order],
        "columns": [{"name": c, "label": column_label(report, c, long=True), "kind": report["summary"][c]["kind"],
                     "tokens": {l: report["results"][c][l]["tokens"] for l in order},
                     "flags": {l: report["results"][c][l].get("training_flag") for l in order
                               if report["results"][c][l].get("training_flag")}}
                    for c in columns],
        "samples": report.get("samples"),
    }


def explore_section(report: dict[str, Any]) -> str:
    """The interactive part: choosers, a table and a chart recomputed for them, a sentence's
    tokens per tokenizer; empty without :func:`explore_data`."""
    data = explore_data(report)
    if data is None:
        return ""
    esc = html.escape
    ref = report["reference"]
    groups: dict[str, list[dict[str, Any]]] = {}
    for l in data["languages"]:
        groups.setdefault(l["group"], []).append(l)
    parts = ["<section id=explore><h2>Explore</h2><p>Choose the languages, the tokenizers and the reference "
             "language: the table (sortable: click a header), the chart and the sentence view follow. The "
             "reference's own cost is the denominator of every cost here (tokens per reference-word "
             "equivalent, its whitespace words); † no and * little training text.</p>",
             "<fieldset><legend>languages</legend>"]
    for group, members in groups.items():
        parts.append(f"<div class=group><b>{esc(group)}</b> <button type=button data-group=\"{esc(group)}\">"
                     "all/none</button>")
        parts += [f"<label><input type=checkbox name=lang value=\"{esc(l['code'])}\" data-group=\"{esc(group)}\" "
                  f"checked> {esc(l['name'])} ({esc(l['code'])})</label>" for l in members]
        parts.append("</div>")
    parts.append("</fieldset><fieldset><legend>tokenizers</legend>")
    parts += [f"<label><input type=checkbox name=col value=\"{esc(c['name'])}\" checked> {esc(c['label'])}</label>"
              for c in data["columns"]]
    parts.append("</fieldset><fieldset><legend>reference language</legend><select id=ref>")
    parts += [f"<option value=\"{esc(l['code'])}\"{' selected' if l['code'] == ref else ''}>{esc(l['name'])} "
              f"({esc(l['code'])})</option>" for l in data["languages"]]
    parts.append("</select> <span id=explore-status></span></fieldset>"
                 "<table id=explore-table class=explore></table><div id=explore-chart></div>"
                 "<h3>One sentence, tokenized</h3>")
    samples = data["samples"]
    if samples:
        first_other = next((l["code"] for l in data["languages"] if l["code"] != ref), ref)
        parts.append("<p>Token boundaries are boxes (alternating colours; · is a space, ↵ a line break); the "
                     "bytes of a character that a boundary cuts are shown in hex, dashed.</p>"
                     "<label>sentence <select id=sentence>")
        parts += [f"<option value={k}>line {line + 1}: {esc(samples['text'][ref][k][:70])}</option>"
                  for k, line in enumerate(samples["lines"])]
        parts.append("</select></label> <label>language <select id=sentence-lang>")
        parts += [f"<option value=\"{esc(l['code'])}\"{' selected' if l['code'] == first_other else ''}>"
                  f"{esc(l['name'])} ({esc(l['code'])})</option>" for l in data["languages"]]
        parts.append("</select></label>")
    parts.append("<div id=sentence-view></div>")
    payload = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    parts.append(f"<script type=application/json id=explore-data>{payload}</script></section>")
    return "".join(parts)


def page(report: dict[str, Any], figures: list[dict[str, Any]]) -> str:
    """The HTML page; ``figures`` are ``{"title", "caption", "png"}`` dicts."""
    from cybpe.report.variants import summary_table

    esc = html.escape
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>cybpe bench report</title>"
             f"<style>{CSS}</style></head><body><h1>Tokenizer fairness and pre-tokenizer report</h1>"]
    parts += [f"<p class=warn><b>Warning:</b> {esc(w)}</p>" for w in report["warnings"]]
    parts.append("<h2>Settings</h2><table class=settings><tbody>")
    parts += [f"<tr><th>{esc(k)}</th><td><code>{esc(v)}</code></td></tr>" for k, v in settings(report)]
    parts.append("</tbody></table>")
    if report["notes"]:
        parts.append("<h2>Left out, and why</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in report["notes"])
                     + "</ul>")
    parts.append(_glossary(report))
    explore = explore_section(report)
    parts.append(explore)
    parts.append("<h2>Figures</h2><p>Each figure is also in this folder as SVG and PDF (vector) and as a "
                 "300-dpi PNG.</p>")
    for fig in figures:
        data = base64.b64encode(fig["png"]).decode("ascii")
        parts.append(f"<figure><img alt=\"{esc(fig['title'])}\" src=\"data:image/png;base64,{data}\">"
                     f"<figcaption><b>{esc(fig['title'])}.</b> {esc(fig['caption'])}</figcaption></figure>")
    parts.append("<h2>Per tokenizer</h2>" + _html_table(summary_table(report, markdown=True)))
    token_columns = [c for c in report["variants"] if report["summary"][c]["n_vocab"] is not None]
    if token_columns:
        parts.append("<h2>Cost: tokens per English-word equivalent (95% interval)</h2>"
                     f"<p>{esc(DEFINITIONS['tokens_per_word'][1])}.</p>" + _ci_table(report, "tokens_per_word", token_columns))
        if any(report["results"][c][l]["premium"] is not None for c in token_columns for l in report["languages"]):
            parts.append("<h2>Premium (95% interval)</h2>"
                         f"<p>{esc(DEFINITIONS['premium'][1])}.</p>" + _ci_table(report, "premium", token_columns))
    if report.get("baseline"):
        parts.append("<h2>UTF-8 baseline</h2><p>No tokenizer: what the text itself costs in bytes and code "
                     "points against the reference.</p>" + _html_table(baseline_table(report, markdown=True)))
    mix = training_mix_table(report, markdown=True)
    if mix:
        parts.append("<h2>Training mix</h2><p>UTF-8 bytes per language of the training text († none, * under "
                     "100 kB).</p>" + _html_table(mix))
    for metric in available_metrics(report):
        if metric in ("tokens_per_word", "premium"):
            continue
        parts.append(f"<h2>{esc(DEFINITIONS[metric][0].capitalize())}</h2><p>{esc(DEFINITIONS[metric][1])}.</p>"
                     + _html_table(metric_table(report, metric, markdown=True)))
    parts.append("<h2>Texts</h2><table class=sortable><thead><tr><th>lang</th><th>language</th><th>bytes</th><th>chars</th>"
                 "<th>words</th><th>own words</th><th>documents</th><th>lines</th><th>sha256</th></tr></thead><tbody>")
    parts += [f"<tr><td>{esc(lang)}</td><td>{esc(language_cell(report, lang))}</td><td class=n>{t['bytes']}</td>"
              f"<td class=n>{t['chars']}</td><td class=n>{t['words']}</td><td class=n>{t.get('own_words', '')}</td>"
              f"<td class=n>{t.get('documents', '')}</td><td class=n>{t['lines']}</td><td><code>{t['sha256']}</code></td></tr>"
              for lang, t in ((lang, report["texts"][lang]) for lang in language_order(report))]
    parts.append("</tbody></table><h2>Definitions</h2><table><tbody>")
    parts += [f"<tr><th>{esc(name)}</th><td>{esc(text)}</td></tr>" for name, (_l, text) in DEFINITIONS.items()]
    parts.append("</tbody></table><h2>Sources of the measures' names</h2><ul>")
    parts += [f"<li><b>{esc(name)}</b>: {esc(text)}</li>" for name, text in LITERATURE.items()]
    parts.append("</ul><p>Also in this folder: <code>report.json</code> (every number) and "
                 "<code>report.md</code>.</p>")
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "".join(parts)


def write_report(report: dict[str, Any], directory: os.PathLike, *, log: bool = False) -> list[Path]:
    """``index.html`` (with figures when matplotlib is installed), ``report.json``, ``report.md``
    and each figure as PNG (300 dpi), SVG and PDF in ``directory``; returns the paths written."""
    from cybpe.report import plots

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    figures = []
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        report["notes"].append("no figures: matplotlib is not installed (pip install 'cybpe[plot]')")
    else:
        figures = plots.figures(report)
    written = []
    for fig in figures:
        for fmt in plots.FORMATS:
            atomic_write_bytes(folder / f"{fig['file']}.{fmt}", fig[fmt])
            written.append(folder / f"{fig['file']}.{fmt}")
    report["figures"] = [{**{k: v for k, v in fig.items() if k not in plots.FORMATS},
                          "files": [f"{fig['file']}.{fmt}" for fmt in plots.FORMATS]} for fig in figures]
    for name, data in (("report.json", json.dumps(report, indent=1, ensure_ascii=False) + "\n"),
                       ("report.md", markdown(report)), ("index.html", page(report, figures))):
        atomic_write_bytes(folder / name, data.encode("utf-8"))
        written.append(folder / name)
    return written
