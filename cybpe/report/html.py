"""``cybpe bench --report DIR``: one folder with ``index.html``, ``report.json`` and ``report.md``.

The page is self-contained and works offline: CSS inline, figures as inline PNG (base64 data
URIs), no script and nothing fetched. Every output starts with the settings (texts and their
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
from typing import Any

from cybpe.io.atomic import atomic_write_bytes
from cybpe.report.metrics import DEFINITIONS
from cybpe.report.variants import available_metrics, metric_table, render

CSS = """
body { font: 15px/1.45 system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 2px 7px; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; } figure { margin: 1.2em 0 2em; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 13px; color: #444; max-width: 800px; }
.warn { background: #fff4d6; border-left: 4px solid #e0a800; padding: .4em .8em; }
code, pre { font-size: 12.5px; background: #f6f6f6; } pre { padding: .6em; overflow-x: auto; white-space: pre-wrap; }
"""


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
                                     f"({training['chars']:,} chars), sha256 {training['sha256']}")]
    for label, vocab in report.get("vocabularies", {}).items():
        rows.append((f"vocabulary {label}", f"{vocab['file']} (sha256 {vocab['sha256']})"))
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
    out += ["**texts**", "", "| lang | bytes | chars | words | lines | sha256 |", "|---|---:|---:|---:|---:|---|"]
    out += [f"| {lang} | {t['bytes']} | {t['chars']} | {t['words']} | {t['lines']} | `{t['sha256']}` |"
            for lang, t in report["texts"].items()]
    out += ["", "**definitions**", ""] + [f"- `{name}`: {text}" for name, (_label, text) in DEFINITIONS.items()]
    return "\n".join(out) + "\n"


def _html_table(text_table: str) -> str:
    """A markdown table (from :mod:`cybpe.report.variants`) as an HTML table."""
    lines = [line.strip().strip("|").split("|") for line in text_table.strip().splitlines()]
    header, rows = lines[0], lines[2:]
    head = "".join(f"<th>{html.escape(c.strip())}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td{' class=n' if i else ''}>{html.escape(c.strip())}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def page(report: dict[str, Any], figures: list[dict[str, Any]]) -> str:
    """The HTML page; ``figures`` are ``{"title", "caption", "png"}`` dicts."""
    from cybpe.report.variants import summary_table

    esc = html.escape
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>cybpe bench report</title>"
             f"<style>{CSS}</style></head><body><h1>Pre-tokenizer and vocabulary report</h1>"]
    parts += [f"<p class=warn><b>Warning:</b> {esc(w)}</p>" for w in report["warnings"]]
    parts.append("<h2>Settings</h2><table class=settings><tbody>")
    parts += [f"<tr><th>{esc(k)}</th><td><code>{esc(v)}</code></td></tr>" for k, v in settings(report)]
    parts.append("</tbody></table>")
    if report["notes"]:
        parts.append("<h2>Left out, and why</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in report["notes"])
                     + "</ul>")
    parts.append("<h2>Figures</h2>")
    for fig in figures:
        data = base64.b64encode(fig["png"]).decode("ascii")
        parts.append(f"<figure><img alt=\"{esc(fig['title'])}\" src=\"data:image/png;base64,{data}\">"
                     f"<figcaption><b>{esc(fig['title'])}.</b> {esc(fig['caption'])}</figcaption></figure>")
    parts.append("<h2>Per column</h2>" + _html_table(summary_table(report, markdown=True)))
    for metric in available_metrics(report):
        parts.append(f"<h2>{esc(DEFINITIONS[metric][0].capitalize())}</h2><p>{esc(DEFINITIONS[metric][1])}.</p>"
                     + _html_table(metric_table(report, metric, markdown=True)))
    parts.append("<h2>Texts</h2><table><thead><tr><th>lang</th><th>bytes</th><th>chars</th><th>words</th>"
                 "<th>lines</th><th>sha256</th></tr></thead><tbody>")
    parts += [f"<tr><td>{esc(lang)}</td><td class=n>{t['bytes']}</td><td class=n>{t['chars']}</td>"
              f"<td class=n>{t['words']}</td><td class=n>{t['lines']}</td><td><code>{t['sha256']}</code></td></tr>"
              for lang, t in report["texts"].items()]
    parts.append("</tbody></table><h2>Definitions</h2><table><tbody>")
    parts += [f"<tr><th>{esc(name)}</th><td>{esc(text)}</td></tr>" for name, (_l, text) in DEFINITIONS.items()]
    parts.append("</tbody></table><p>Also in this folder: <code>report.json</code> (every number) and "
                 "<code>report.md</code>.</p></body></html>")
    return "".join(parts)


def write_report(report: dict[str, Any], directory: os.PathLike, *, log: bool = False) -> list[Path]:
    """``index.html`` (with figures when matplotlib is installed), ``report.json``, ``report.md``
    and one PNG per figure in ``directory``; returns the paths written."""
    from cybpe.report import plots

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    figures = []
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        report["notes"].append("no figures: matplotlib is not installed (pip install 'cybpe[plot]')")
    else:
        for metric, group, columns in plots.figure_plan(report):
            title = plots.figure_title(report, metric, group)
            png = plots.draw(report, metric, columns, group, log=log and metric != "chars_per_token")
            figures.append({"metric": metric, "title": title, "png": png,
                            "caption": plots.caption(report, metric, columns, log and metric != "chars_per_token"),
                            "file": f"{metric}-{group.replace(' ', '-')}.png"})
    written = []
    for fig in figures:
        atomic_write_bytes(folder / fig["file"], fig["png"])
        written.append(folder / fig["file"])
    report["figures"] = [{k: v for k, v in fig.items() if k != "png"} for fig in figures]
    for name, data in (("report.json", json.dumps(report, indent=1, ensure_ascii=False) + "\n"),
                       ("report.md", markdown(report)), ("index.html", page(report, figures))):
        atomic_write_bytes(folder / name, data.encode("utf-8"))
        written.append(folder / name)
    return written
