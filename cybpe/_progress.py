"""Progress bars for long phases: tqdm when installed (the `progress` extra), else plain lines.

tqdm is the well-kept choice (rates, ETA, terminal width, notebooks); without it a minimal
fallback prints one updating line to stderr. Nothing is printed when ``enabled`` is False.
"""

from __future__ import annotations

import sys
import time
from typing import Optional


class Progress:
    def __init__(self, enabled: bool, label: str, *, unit: str, total: Optional[int] = None,
                 scale: float = 1.0) -> None:
        self.enabled, self.label, self.unit, self.total, self.scale = enabled, label, unit, total, scale
        self._bar = None
        self._done = 0.0
        self._start = time.perf_counter()
        self._last = 0.0

    def __enter__(self) -> "Progress":
        if self.enabled:
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=self.total, desc=self.label, unit=self.unit,
                                 unit_scale=self.scale != 1.0, file=sys.stderr, leave=True)
                if self.scale != 1.0:
                    self._bar.unit_scale = self.scale
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
            rate = self._done * self.scale / max(now - self._start, 1e-9)
            sys.stderr.write(f"\r{self.label}: {self._done * self.scale:,.1f} {self.unit} ({rate:,.1f} {self.unit}/s)")
            sys.stderr.flush()

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            sys.stderr.write("\n")
