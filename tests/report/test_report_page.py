"""The report page's interactive part in a real browser (Debian's chromium, headless): it loads
with no console errors, the choosers change what is shown, the tables sort, and a screenshot of
the interactive section matches a reference at a tolerance.

The browser is driven with ``--dump-dom`` (a check script injected into the page does the clicks
and writes what it saw into the DOM) and ``--screenshot`` (the same script, so the same state).
The page is made from a fixed report (the bundled UDHR sample, a small trained tokenizer, the
timings set to constants), so its pixels do not depend on the machine's speed.
``CYBPE_UPDATE_SCREENSHOTS=1`` rewrites the reference image (``tests/data/report-explore.png``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import cybpe
from cybpe.report.html import page
from cybpe.report.variants import build_report
from support import UDHR_DIR as UDHR

LANGS = ("en", "ru", "hi", "ta", "th", "zh-Hans")
REFERENCE_PNG = Path(__file__).resolve().parents[1] / "data" / "report-explore.png"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--hide-scrollbars", "--force-device-scale-factor=1", "--virtual-time-budget=10000"]

#: First in <head>: every console.error, uncaught error and unhandled rejection is kept.
CAPTURE = """<script>window.__errors = [];
(function () { var original = console.error;
  console.error = function () { window.__errors.push(Array.prototype.join.call(arguments, ' ')); original.apply(console, arguments); };
  window.addEventListener('error', function (e) { window.__errors.push('error: ' + e.message); });
  window.addEventListener('unhandledrejection', function (e) { window.__errors.push('rejection: ' + e.reason); });
}());</script>"""

#: Last in <body>: use the choosers as a reader would, and write down what changed.
CHECK = """<script>
window.addEventListener('load', function () {
  var out = {}, q = function (s) { return document.querySelectorAll(s); };
  var change = function (el) { el.dispatchEvent(new Event('change')); };
  var rows = function () { return Array.prototype.map.call(q('#explore-table tbody tr'), function (r) { return r.getAttribute('data-lang'); }); };
  var cell = function (lang, k) { var r = document.querySelector('#explore-table tbody tr[data-lang="' + lang + '"]'); return r ? r.cells[k].textContent : null; };
  try {
    out.rows0 = rows();
    out.heads0 = q('#explore-table thead th').length;
    out.dots0 = q('#explore-chart circle').length;
    out.premium_hi_en = cell('hi', 3);
    var th = document.querySelector('input[name=lang][value=th]'); th.checked = false; change(th);
    out.rows1 = rows();
    out.dots1 = q('#explore-chart circle').length;
    var ref = document.getElementById('ref'); ref.value = 'hi'; change(ref);
    out.premium_hi_hi = cell('hi', 3);
    out.premium_en_hi = cell('en', 3);
    out.status = document.getElementById('explore-status').textContent;
    var col = q('input[name=col]')[1]; col.checked = false; change(col);
    out.heads1 = q('#explore-table thead th').length;
    out.token_rows = q('#sentence-view tr').length;
    var view0 = document.getElementById('sentence-view').textContent;
    var sentence = document.getElementById('sentence'); sentence.value = '1'; change(sentence);
    out.sentence_changed = document.getElementById('sentence-view').textContent !== view0;
    var lang = document.getElementById('sentence-lang'); lang.value = 'hi'; change(lang);
    out.partial = q('#sentence-view .partial').length;
    out.tokens = q('#sentence-view .tok').length;
    lang.value = 'ru'; change(lang);  // the screenshot's state: a script every font here has
    var head = q('#explore-table thead th')[2]; head.click(); var up = rows(); head.click();
    out.sorted = [up, rows()];
    var texts = Array.prototype.filter.call(q('table.sortable'), function (t) { return t.tBodies[0].rows.length > 2; })[0];
    var first = texts.tBodies[0].rows[0].cells[0].textContent; texts.tHead.rows[0].cells[0].click(); texts.tHead.rows[0].cells[0].click();
    out.static_sorted = texts.tBodies[0].rows[0].cells[0].textContent !== first;
  } catch (e) { window.__errors.push('check: ' + e.message); }
  out.errors = window.__errors;
  var pre = document.createElement('pre'); pre.id = 'render-check'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""

#: For the screenshot: the interactive section only, in the state the check leaves it.
ONLY_EXPLORE = "<style>body > *:not(#explore) { display: none !important; } #render-check { display: none; }</style>"


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    reason = "no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must test the report page in a browser")
    pytest.skip(reason)


def _probe(html: str, *extra_head: str) -> str:
    return html.replace("<head>", "<head>" + CAPTURE + "".join(extra_head), 1).replace("</body>", CHECK + "</body>")


def _run(chromium: str, html: str, tmp_path: Path) -> dict:
    probe = tmp_path / "probe.html"
    probe.write_text(_probe(html), encoding="utf-8")
    dom = subprocess.run([chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="render-check">(.*?)</pre>', dom.stdout, re.S)
    assert found, f"the check script did not run: {dom.stderr[-2000:]}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                      .replace("&gt;", ">"))


@pytest.fixture(scope="module")
def fixed_page():
    lines = {lang: (UDHR / f"{lang}.txt").read_text(encoding="utf-8").splitlines() for lang in LANGS}
    n = min(len(v) for v in lines.values())
    texts = {lang: "\n".join(v[:n]) for lang, v in lines.items()}  # the same line count: aligned
    tok = cybpe.train(["\n".join(v[n:] or v) for v in lines.values()], 700)
    tok.name = "cl100k-700"
    report = build_report(texts, ["cl100k"], {"cl100k": tok}, parallel=True, speed_mb=0.001,
                          training_mixes={"cl100k": {"en": 300_000, "ru": 200_000, "hi": 20_000}},
                          info={"text_set": "UDHR sample (first lines)", "command_line": "fixed", "reproduce": "fixed"})
    for summary in report["summary"].values():  # timings vary from run to run: not on a screenshot
        summary.update(encode_mb_s=1.0, regex_mb_s=1.0, compiled_mb_s=2.0, train_seconds=None)
    report["speed_sample_bytes"] = 0
    # a second column (a published vocabulary's counts, faked from the first) to choose between
    report["variants"].append("other")
    report["results"]["other"] = {lang: dict(row, tokens=row["tokens"] * 2 + 5, training_flag=None)
                                  for lang, row in report["results"]["cl100k"].items()}
    report["summary"]["other"] = dict(report["summary"]["cl100k"], kind="vocabulary", training_mix=None)
    report["samples"]["tokens"]["other"] = report["samples"]["tokens"]["cl100k"]
    return report, page(report, [])


def test_the_check_sees_console_errors(tmp_path):
    """The capture can fail: an uncaught error and a console.error are both reported."""
    chromium = _chromium()
    html = "<html><head></head><body><script>console.error('boom'); undefined_function();</script></body></html>"
    checked = _run(chromium, html, tmp_path)
    assert "boom" in checked["errors"] and any("undefined_function" in e for e in checked["errors"])


def test_choosers_change_what_is_shown(fixed_page, tmp_path):
    chromium = _chromium()
    report, html = fixed_page
    assert "http://" not in html and "https://" not in html  # offline: nothing fetched
    checked = _run(chromium, html, tmp_path)
    assert checked["errors"] == []
    assert checked["rows0"] == ["en", "ru", "hi", "ta", "th", "zh-Hans"] or set(checked["rows0"]) == set(LANGS)
    assert len(checked["rows0"]) == len(LANGS) and checked["heads0"] == 2 + 2 * 2
    assert checked["dots0"] == len(LANGS) * 2
    # a language unchecked: gone from the table and the chart
    assert "th" not in checked["rows1"] and len(checked["rows1"]) == len(LANGS) - 1
    assert checked["dots1"] == (len(LANGS) - 1) * 2
    # the reference language changed: premiums are over Hindi now
    premium = report["results"]["cl100k"]["hi"]["premium"]
    assert checked["premium_hi_en"] == f"{premium:.2f}"
    assert checked["premium_hi_hi"] == "1.00" and checked["premium_en_hi"] == f"{1 / premium:.2f}"
    assert checked["status"] == "5 languages, 2 tokenizers, reference hi"
    # a tokenizer unchecked: its two columns and its sentence row go
    assert checked["heads1"] == 2 + 2 and checked["token_rows"] == 1
    assert checked["sentence_changed"]
    # Hindi under a 700-token vocabulary: characters cut by token boundaries are shown as bytes
    assert checked["partial"] > 0 and checked["tokens"] > 0
    up, down = checked["sorted"]
    assert sorted(up) == sorted(down) and up != down
    assert checked["static_sorted"]


def _gray(path: Path) -> np.ndarray:
    import matplotlib.image as mpimg

    image = mpimg.imread(path)[..., :3]
    return image.mean(axis=2)


def test_screenshot_matches_the_reference(fixed_page, tmp_path):
    pytest.importorskip("matplotlib")
    chromium = _chromium()
    _report, html = fixed_page
    probe = tmp_path / "shot.html"
    probe.write_text(_probe(html, ONLY_EXPLORE), encoding="utf-8")
    shot = tmp_path / "explore.png"
    subprocess.run([chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                    "--window-size=1000,1300", probe.as_uri()], capture_output=True, timeout=180)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("CYBPE_UPDATE_SCREENSHOTS"):
        shutil.copyfile(shot, REFERENCE_PNG)
    got, want = _gray(shot), _gray(REFERENCE_PNG)
    assert got.shape == want.shape
    assert got.std() > 0.05  # not a blank page
    differs = np.abs(got - want) > 0.25
    # fonts may anti-alias a little differently; a changed layout moves far more than 1% of pixels
    assert differs.mean() < 0.01, f"{differs.mean():.2%} of the pixels differ; see {shot}"
