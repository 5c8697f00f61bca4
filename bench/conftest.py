"""Benchmarks need pytest-benchmark (the `bench` extra)."""

import pytest

pytest.importorskip("pytest_benchmark")
