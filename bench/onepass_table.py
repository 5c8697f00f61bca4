"""The one-pass encode table from ``test_bench_onepass.py``'s JSON: a Markdown table per
vocabulary with each library's MB/s (one pass, one thread) and cybpe over the fastest peer
whose ids equal the reference's, then the median of that ratio over the cells.

    python bench/onepass_table.py onepass.json [--out table.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict

SHARED_CORE = 0.95  # a one-thread row whose thread had its core less of the time than this is flagged
ORDER = ["en", "code-c", "code-python", "de", "fr", "es", "ru", "uk", "ar", "hi", "ta", "km", "dz",
         "ja", "ko", "zh-Hans", "zh-Hant"]


def load(path: str) -> dict:
    rows = defaultdict(dict)  # (vocab, lang) -> lib -> extra_info
    with open(path, encoding="utf-8") as f:
        for bench in json.load(f)["benchmarks"]:
            info = bench["extra_info"]
            if "pass_mb_s" in info:
                rows[(info["vocab"], info["lang"])][info["lib"]] = info
    return rows


def table(rows: dict) -> str:
    libs = [lib for lib in ["cybpe", "cybpe-2threads", "fastokens", "quicktok", "tiktoken", "hf", "tokie",
                            "bpe-openai", "nanotok"] if any(lib in cell for cell in rows.values())]
    peers = [lib for lib in libs if not lib.startswith("cybpe")]
    out, ratios_all = [], []
    versions = {lib: info["version"] for cell in rows.values() for lib, info in cell.items()}
    for vocab in sorted({v for v, _ in rows}, key=["cl100k_base", "o200k_base", "llama3", "qwen3"].index):
        langs = sorted({lang for v, lang in rows if v == vocab},
                       key=lambda lang: (ORDER.index(lang) if lang in ORDER else len(ORDER), lang))
        out.append(f"\n**{vocab}**, MB/s, one pass (ids differing from the reference in parentheses, unranked)\n")
        out.append("| text | " + " | ".join(libs) + " | cybpe ÷ fastest exact peer |")
        out.append("|---" * (len(libs) + 2) + "|")
        ratios = []
        for lang in langs:
            cell = rows[(vocab, lang)]
            shown = []
            for lib in libs:
                info = cell.get(lib)
                if info is None:
                    shown.append("–")
                else:
                    value = f"{info['pass_mb_s']:.0f}"
                    shown.append(value if info["ids_identical"] else f"({value})")
            exact = [cell[lib]["pass_mb_s"] for lib in peers if lib in cell and cell[lib]["ids_identical"]]
            ratio = ""
            if exact and "cybpe" in cell and cell["cybpe"]["ids_identical"]:
                r = cell["cybpe"]["pass_mb_s"] / max(exact)
                ratios.append(r)
                ratio = f"{r:.2f}"
            out.append(f"| {lang} | " + " | ".join(shown) + f" | {ratio} |")
        if ratios:
            out.append(f"\n{vocab}: cybpe ÷ fastest exact peer, median over {len(ratios)} texts "
                       f"{statistics.median(ratios):.2f}, lowest {min(ratios):.2f}, highest {max(ratios):.2f}.")
        ratios_all += ratios
    if ratios_all:
        out.append(f"\nAll cells: median {statistics.median(ratios_all):.2f}, lowest {min(ratios_all):.2f}, "
                   f"cells at or above 1.0: {sum(r >= 1 for r in ratios_all)} of {len(ratios_all)}.")
    shared = [f"{vocab} {lang} {lib} ({info['thread_over_wall']:.2f})"
              for (vocab, lang), cell in sorted(rows.items()) for lib, info in sorted(cell.items())
              if info.get("thread_over_wall") is not None and info["thread_over_wall"] < SHARED_CORE]
    if any("thread_over_wall" in info for cell in rows.values() for info in cell.values()):
        out.append(f"\nOne-thread rows whose thread ran less than {SHARED_CORE:.0%} of the wall time "
                   f"(another process or thread took the core; rerun them): "
                   + (", ".join(shared) if shared else "none") + ".")
    out.append("\nVersions: " + ", ".join(f"{lib} {versions[lib]}" for lib in libs if lib in versions) + ".")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json")
    parser.add_argument("--out")
    args = parser.parse_args()
    text = table(load(args.json))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
