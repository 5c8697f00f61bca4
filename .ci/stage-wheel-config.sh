#!/usr/bin/env bash
# CI stage "wheel-config": the release configuration, on paper (issue 40). cibuildwheel lists the
# wheels [tool.cibuildwheel] builds for Linux, macOS and Windows (--print-build-identifiers: no
# build), and actionlint checks .github/workflows; tests/test_wheel_config.py compares them with
# the platforms, Pythons, classifiers and core suite the project states.
#
#   bash .ci/stage-wheel-config.sh PYTHON [SHARED]
#
# PYTHON: a venv's python with cybpe's test tools (left unchanged: the tools go to a venv of the
# stage's own that sees its packages). SHARED is accepted for the common interface, not needed.
set -euo pipefail
PYTHON="${1:?usage: bash .ci/stage-wheel-config.sh PYTHON [SHARED]}"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
START=$SECONDS
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cybpe-wheel-config.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" -m venv "$WORK/venv"
CYBPE_SITE="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
OWN_SITE="$("$WORK/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "import site; site.addsitedir('$CYBPE_SITE')" > "$OWN_SITE/zz-cybpe-venv.pth"
"$WORK/venv/bin/python" -m pip install --quiet -r "$REPO/.ci/tools-requirements.txt"
export PATH="$WORK/venv/bin:$PATH"
python -m pip list 2>/dev/null | grep -iE "^(cibuildwheel|actionlint)"
actionlint --version | head -1
cd "$REPO"
# -rs: a skip would mean a tool is missing; the stage fails on it below.
out="$(python -m pytest -q -p no:cacheprovider -rs tests/test_wheel_config.py 2>&1)" || { echo "$out"; exit 1; }
echo "$out"
if grep -q "SKIPPED" <<<"$out"; then echo "stage wheel-config: a check was skipped (a tool missing?)" >&2; exit 1; fi
echo "stage wheel-config: $((SECONDS - START)) s"
