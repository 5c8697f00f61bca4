"""The wheel configuration (issue 40): [tool.cibuildwheel] in pyproject.toml builds every platform
the project ships, runs the core suite on each wheel, and agrees with the classifiers, .ci/run and
the release workflow.

cibuildwheel and actionlint are release tools, not test dependencies: the tests that run them skip
where they are not installed (.ci/stage-wheel-config.sh installs .ci/tools-requirements.txt and
runs this file)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import TESTS_DIR

ROOT = TESTS_DIR.parent
PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14"]
ARCHS = {"linux": ["x86_64", "aarch64"], "macos": ["x86_64", "arm64"], "windows": ["AMD64"]}


def _pyproject() -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def expected_identifiers(platform: str) -> set[str]:
    tags = [f"cp{v.replace('.', '')}" for v in PYTHONS]
    if platform == "linux":
        return {f"{t}-{libc}_{arch}" for t in tags for libc in ("manylinux", "musllinux") for arch in ARCHS["linux"]}
    if platform == "macos":
        return {f"{t}-macosx_{arch}" for t in tags for arch in ARCHS["macos"]}
    return {f"{t}-win_amd64" for t in tags}


@pytest.mark.parametrize("platform", sorted(ARCHS))
def test_cibuildwheel_builds_every_platform_and_python(platform, tmp_path):
    if shutil.which("cibuildwheel") is None:
        pytest.skip("cibuildwheel is not installed (.ci/tools-requirements.txt)")
    out = subprocess.run(["cibuildwheel", "--print-build-identifiers", "--platform", platform, str(ROOT)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    identifiers = set(out.stdout.split())
    assert identifiers == expected_identifiers(platform), sorted(identifiers ^ expected_identifiers(platform))
    assert not [i for i in identifiers if re.match(r"cp\d+t-", i)], "free-threaded builds are not declared safe yet"


def test_the_config_names_every_architecture():
    config = _pyproject()["tool"]["cibuildwheel"]
    for platform, archs in ARCHS.items():
        assert config[platform]["archs"] == archs
    assert config["build"] == [f"cp{v.replace('.', '')}-*" for v in PYTHONS]
    assert "cp31?t-*" in config["skip"]  # free-threaded: listed, skipped (docs/guide/free-threading.md)


def test_the_classifiers_claim_only_what_is_tested():
    # The classifiers claim what is tested before a release: the Pythons .ci/run tests (every
    # claimed one, on Linux x86_64), Linux (aarch64 too, .ci/platforms). The wheels also cover
    # CPython 3.14, macOS and Windows, whose tests run only in the release workflow: they join the
    # classifiers once it has passed there (docs/platforms.md).
    project = _pyproject()["project"]
    claimed = sorted((c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
                      if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)), key=lambda v: int(v[2:]))
    assert claimed == ["3.10", "3.11", "3.12", "3.13"]
    assert set(claimed) <= set(PYTHONS)
    assert project["requires-python"] == f">={claimed[0]}"
    systems = {c for c in project["classifiers"] if c.startswith("Operating System ::")}
    assert systems == {"Operating System :: POSIX :: Linux"}


def test_each_wheel_is_tested_with_the_core_suite():
    run = ROOT / ".ci" / "run"
    if not run.is_file():
        pytest.skip("needs the checkout's .ci/run (the tests run from a copy without it)")
    core = re.search(r"^CORE_TESTS=\((.*?)\)", run.read_text(encoding="utf-8"), re.S | re.M).group(1).split()
    command = _pyproject()["tool"]["cibuildwheel"]["test-command"].split()
    assert [a for a in command if a.startswith("tests/")] == core
    for path in core:
        assert (ROOT / path).is_file(), path


def test_the_release_workflow_builds_every_platform_and_publishes_on_tags():
    workflow = ROOT / ".github" / "workflows" / "wheels.yml"
    if not workflow.is_file():
        pytest.skip("needs the checkout's .github/workflows (the tests run from a copy without it)")
    text = workflow.read_text(encoding="utf-8")
    for platform, archs in ARCHS.items():
        for arch in archs:
            assert re.search(rf"platform: {platform}, archs: {arch} \}}", text), (platform, arch)
    assert "pypa/gh-action-pypi-publish" in text and "id-token: write" in text
    assert "tags: [\"v*\"]" in text
    assert "python -m build --sdist" in text


def test_actionlint_finds_nothing_in_the_workflows():
    workflows = ROOT / ".github" / "workflows"
    if not workflows.is_dir():
        pytest.skip("needs the checkout's .github/workflows")
    if shutil.which("actionlint") is None:
        pytest.skip("actionlint is not installed (.ci/tools-requirements.txt)")
    out = subprocess.run(["actionlint", *sorted(str(p) for p in workflows.glob("*.yml"))],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_skip_pattern_is_what_cibuildwheel_would_match():
    # fnmatch is what cibuildwheel matches identifiers with: the free-threaded ones are skipped,
    # the ordinary ones are not.
    from fnmatch import fnmatch
    skip = _pyproject()["tool"]["cibuildwheel"]["skip"]
    assert any(fnmatch("cp314t-manylinux_x86_64", p) for p in skip)
    assert any(fnmatch("cp313t-win_amd64", p) for p in skip)
    assert not any(fnmatch(i, p) for p in skip for platform in ARCHS for i in expected_identifiers(platform))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
