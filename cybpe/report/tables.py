"""Plain-text and markdown tables: the report's, and the command line's plugin list."""

from __future__ import annotations


def text_table(header: list[str], rows: list[list[str]], markdown: bool, numeric: bool = True) -> str:
    """A plain-text or markdown table; columns after the first are right-aligned when ``numeric``."""
    right = lambda i: numeric and i > 0  # noqa: E731
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if right(i) else "---" for i in range(len(header))) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = lambda r: "  ".join(c.rjust(w) if right(i) else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()  # noqa: E731
    return "\n".join([fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows])
