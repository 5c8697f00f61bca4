"""Progress bars for long phases: tqdm when installed (the `progress` extra), else plain lines.

tqdm is the well-kept choice (rates, ETA, SI prefixes, terminal width, notebooks); without it a
minimal fallback prints one updating line to stderr. Nothing is printed when ``enabled`` is False.
"""

from __future__ import annotations

import sys
import time
from typing import Optional


class Progress:
    """``unit="B"`` shows bytes with SI prefixes (MB, MB/s); other units count plainly."""

    def __init__(self, enabled: bool, label: str, *, unit: str, total: Optional[int] = None) -> None:
        self.enabled, self.label, self.unit, self.total = enabled, label, unit, total
        self._bar = None
        self._done: float = 0
        self._start = time.perf_counter()
        self._last = 0.0

    def __enter__(self) -> "Progress":
        if self.enabled:
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=self.total, desc=self.label, unit=self.unit,
                                 unit_scale=self.unit == "B", file=sys.stderr, leave=True)
            except ImportError:
                self._bar = None
        return self

    def advance(self, n: float) -> None:
        self.update(self._done + n)

    def update(self, done: float) -> None:
        step, self._done = done - self._done, done
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(step)
            return
        now = time.perf_counter()
        if now - self._last > 0.5:
            self._last = now
            scale, unit = (1e-6, "MB") if self.unit == "B" else (1.0, self.unit)
            rate = self._done * scale / max(now - self._start, 1e-9)
            sys.stderr.write(f"\r{self.label}: {self._done * scale:,.1f} {unit} ({rate:,.1f} {unit}/s)")
            sys.stderr.flush()

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            sys.stderr.write("\n")
