"""roomy_malloc: raises glibc's thresholds only where the environment pinned them (as Dask's
nanny does), restores them when the last user leaves, and changes no count."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import cybpe
from cybpe.training import allocator

SCRIPT = textwrap.dedent("""
    import contextlib, pathlib, resource, sys
    import cybpe
    from cybpe.training.allocator import roomy_malloc
    text = pathlib.Path(sys.argv[2])
    text.write_text("".join(f"naïve café 日本語 word{i} and more words\\n" for i in range(300_000)))
    plain = cybpe.count(text)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    with (roomy_malloc() if sys.argv[1] == "roomy" else contextlib.nullcontext(None)) as raised:
        for _ in range(6):
            counts = cybpe.count(text)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert counts == plain
    print(raised, faults)
""")


def _run(how: str, trim: bool, tmp_path) -> tuple[str, int]:
    env = dict(os.environ)
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    if trim:
        env["MALLOC_TRIM_THRESHOLD_"] = "65536"
    out = subprocess.run([sys.executable, "-c", SCRIPT, how, str(tmp_path / "text.txt")], capture_output=True, text=True, env=env, check=True)
    raised, faults = out.stdout.split()
    return raised, int(faults)


@pytest.mark.slow
@pytest.mark.skipif(not allocator.is_glibc(), reason="glibc only")
def test_raised_only_where_the_environment_pins_the_thresholds(tmp_path):
    assert _run("roomy", trim=False, tmp_path=tmp_path)[0] == "False"
    raised, faults = _run("roomy", trim=True, tmp_path=tmp_path)
    assert raised == "True"
    # pinned and not raised, each count of the 12 MB file maps and faults in its buffers afresh
    pinned = _run("plain", trim=True, tmp_path=tmp_path)[1]
    assert faults < pinned / 2, (faults, pinned)


def test_nested_and_threaded_entries_restore_once(monkeypatch):
    calls = []

    class FakeLibc:
        def mallopt(self, option, value):
            calls.append((option, value))
            return 1

        def malloc_trim(self, pad):
            calls.append(("trim", pad))
            return 1

    monkeypatch.setattr(allocator, "_libc", FakeLibc())
    monkeypatch.setattr(allocator, "_libc_checked", True)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with allocator.roomy_malloc() as outer:
        with allocator.roomy_malloc() as inner:
            assert outer and inner
        assert ("trim", 0) not in calls  # the outer user is still counting
        assert cybpe.count("some text") == cybpe.count(["some text"])
    assert calls == [(-3, allocator.ROOMY_MMAP_THRESHOLD), (-1, allocator.ROOMY_TRIM_THRESHOLD),
                     (-1, 65536), (-3, 128 * 1024), ("trim", 0)]
    assert allocator._users == 0


@pytest.mark.parametrize("platform, confstr", [
    ("darwin", None), ("win32", None),
    ("linux", ValueError("unrecognized configuration name")),  # musl
    ("linux", lambda name: None),
])
def test_nothing_is_tuned_without_glibc(monkeypatch, platform, confstr):
    monkeypatch.setattr(allocator.sys, "platform", platform)
    if isinstance(confstr, Exception):
        def confstr(name, error=confstr):
            raise error
    if confstr is None:
        monkeypatch.delattr(allocator.os, "confstr", raising=False)
    else:
        monkeypatch.setattr(allocator.os, "confstr", confstr)
    monkeypatch.setattr(allocator, "_libc", None)
    monkeypatch.setattr(allocator, "_libc_checked", False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    assert not allocator.is_glibc()
    with allocator.roomy_malloc() as raised:
        assert raised is False
    assert allocator._libc is None
