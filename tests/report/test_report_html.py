"""``cybpe bench --report DIR``: the page as a reader sees it (headless Chromium), its settings,
and the numbers it reproduces from its own recorded command."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from support import UDHR_DIR as UDHR

LANGS = ("en", "hi", "th", "zh-Hans")


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    reason = "no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must render the report")
    pytest.skip(reason)


def _bench(*args, cwd=None):
    out = subprocess.run([sys.executable, "-m", "cybpe", "bench", *map(str, args)], capture_output=True,
                         text=True, timeout=600, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return out


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    pytest.importorskip("matplotlib")
    tmp = tmp_path_factory.mktemp("report")
    corpus = tmp / "corpus.txt"
    corpus.write_text("".join((UDHR / f"{lang}.txt").read_text(encoding="utf-8") for lang in LANGS),
                      encoding="utf-8")
    _bench("--texts", *(UDHR / f"{lang}.txt" for lang in LANGS), "--variants", "cl100k,abugida,gpt2",
           "--train-corpus", corpus, "--vocab-size", 400, "--speed-mb", 0.02, "--parallel", "yes",
           "--log", "--report", tmp / "out", "--save-tokenizers", tmp / "toks")
    return tmp


def test_report_files_and_settings(report_dir):
    out = report_dir / "out"
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["word_basis"] == "reference" and report["parallel"] is True
    for lang in LANGS:
        assert report["texts"][lang]["sha256"] == hashlib.sha256((UDHR / f"{lang}.txt").read_bytes()).hexdigest()
    assert report["training"]["vocab_size"] == 400
    assert report["command_line"].startswith("cybpe bench --texts")
    assert report["figures"], "matplotlib is installed: the report must have figures"
    for fig in report["figures"]:  # each figure as PNG (300 dpi), SVG and PDF
        assert fig["files"] == [f"{fig['file']}.png", f"{fig['file']}.svg", f"{fig['file']}.pdf"]
        png = (out / f"{fig['file']}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"pHYs" in png and int.from_bytes(png[png.index(b"pHYs") + 4:][:4], "big") >= 7874  # >= 200 dpi
        assert b"<svg" in (out / f"{fig['file']}.svg").read_bytes()[:2000]
        assert (out / f"{fig['file']}.pdf").read_bytes()[:5] == b"%PDF-"
        assert fig["title"] and fig["caption"]
    md = (out / "report.md").read_text(encoding="utf-8")
    assert report["reproduce"] in md and "| hi |" in md
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page  # offline: nothing fetched
    assert page.count("data:image/png;base64,") == len(report["figures"])
    # the trained tokenizers were kept, and count the same tokens as in the report
    import cybpe

    for name in ("cl100k", "abugida", "gpt2"):
        tok = cybpe.Tokenizer.load(report_dir / "toks" / f"{name}.json")
        assert tok.count((UDHR / "hi.txt").read_text(encoding="utf-8")) == report["results"][name]["hi"]["tokens"]


def test_rerunning_the_recorded_command_gives_the_same_numbers(report_dir, tmp_path):
    report = json.loads((report_dir / "out" / "report.json").read_text(encoding="utf-8"))
    argv = shlex.split(report["reproduce"])
    assert argv[:2] == ["cybpe", "bench"]
    again = json.loads(_bench(*argv[2:], "--json", cwd=tmp_path).stdout)  # another directory on purpose
    assert again["results"] == report["results"]
    assert again["texts"] == report["texts"]
    for name, summary in report["summary"].items():
        for key in ("gini", "gini_pieces", "mean_premium", "n_vocab", "kind"):
            assert again["summary"][name][key] == summary[key], (name, key)


CHECK = """<script>
window.addEventListener('load', function () {
  var imgs = Array.from(document.images), tables = Array.from(document.querySelectorAll('table'));
  var out = document.createElement('pre'); out.id = 'render-check';
  out.textContent = JSON.stringify({
    images: imgs.map(function (i) { return [i.alt, i.complete, i.naturalWidth, i.naturalHeight]; }),
    tables: tables.map(function (t) { return t.querySelectorAll('tbody tr').length; })});
  document.body.appendChild(out);
});
</script>"""


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--virtual-time-budget=10000"]


def _render_check(chromium: str, page: str, tmp_path) -> dict:
    """What the check script saw once the page loaded in Chromium: every image and table."""
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", CHECK + "</body>"), encoding="utf-8")
    dom = subprocess.run([chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="render-check">(.*?)</pre>', dom.stdout, re.S)
    assert found, f"the check script did not run: {dom.stderr[-2000:]}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_the_check_sees_a_broken_image(tmp_path):
    """The render check can fail: a PNG that does not decode has no width."""
    chromium = _chromium()
    page = ('<html><body><img alt=bad src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAA=="><table><tbody>'
            '</tbody></table></body></html>')
    checked = _render_check(chromium, page, tmp_path)
    assert checked["images"] == [["bad", True, 0, 0]]
    assert checked["tables"] == [0]


def test_the_page_renders_in_headless_chromium(report_dir, tmp_path):
    chromium = _chromium()
    page = (report_dir / "out" / "index.html").read_text(encoding="utf-8")
    checked = _render_check(chromium, page, tmp_path)
    report = json.loads((report_dir / "out" / "report.json").read_text(encoding="utf-8"))
    assert len(checked["images"]) == len(report["figures"]) > 0
    for alt, complete, width, height in checked["images"]:
        assert complete and width > 0 and height > 0, alt
    assert checked["tables"] and all(rows > 0 for rows in checked["tables"]), checked["tables"]
    shot = tmp_path / "report.png"
    subprocess.run([chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                    "--window-size=1200,2400", (report_dir / "out" / "index.html").as_uri()],
                   capture_output=True, timeout=180)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {shot}")
