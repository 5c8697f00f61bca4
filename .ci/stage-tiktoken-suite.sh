#!/usr/bin/env bash
# tiktoken 0.14.0's own test suite, unchanged, run against cybpe through
# cybpe.compat.install_tiktoken().
#
#   bash .ci/stage-tiktoken-suite.sh <python of a venv with cybpe[test] installed> <shared dir>
#
# The tests come from tiktoken's sdist on PyPI (pip download; the only network use); the
# vocabularies from <shared dir>/vocab (cybpe's registry reads them through
# CYBPE_ENCODINGS_DIR; tiktoken's cache is turned off). A sitecustomize.py on PYTHONPATH installs
# cybpe's tiktoken modules in every interpreter the suite starts (its subprocess test too), so
# the real tiktoken of the test extra is never the one imported; a conftest.py asserts that
# before collection and again at the end of the session. Skips (exit 0) when the shared
# vocabularies are absent.
set -euo pipefail

PY=${1:?usage: bash .ci/stage-tiktoken-suite.sh <venv python> <shared dir>}
SHARED=${2-}   # empty: no shared vocabularies, the stage skips
VOCAB="$SHARED/vocab"
VERSION=0.14.0

if [ ! -d "$VOCAB" ] || [ -z "$(ls -A "$VOCAB" 2>/dev/null)" ]; then
    echo "stage-tiktoken-suite: SKIPPED: no vocabularies in $VOCAB (tiktoken's suite needs the shared .tiktoken and GPT-2 files)"
    exit 0
fi
VOCAB=$(cd "$VOCAB" && pwd)

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

"$PY" -m pip download -q --no-deps --no-binary :all: "tiktoken==$VERSION" -d "$WORK/sdist"
tar xzf "$WORK/sdist/tiktoken-$VERSION.tar.gz" -C "$WORK" "tiktoken-$VERSION/tests"
mkdir "$WORK/run" "$WORK/shim"
mv "$WORK/tiktoken-$VERSION/tests" "$WORK/run/tests"

cat > "$WORK/shim/sitecustomize.py" <<'PYEOF'
import cybpe.compat

cybpe.compat.install_tiktoken()
PYEOF

cat > "$WORK/run/conftest.py" <<'PYEOF'
import sys

import tiktoken


def _check():
    module = sys.modules["tiktoken"]
    assert module.__name__ == "cybpe.compat.tiktoken", module
    assert module.Encoding.__module__ == "cybpe.compat.tiktoken.core", module.Encoding
    assert "tiktoken._tiktoken" not in sys.modules, "the real tiktoken's extension was imported"


assert tiktoken.__name__ == "cybpe.compat.tiktoken", tiktoken
_check()


def pytest_sessionfinish(session, exitstatus):
    _check()
PYEOF

cd "$WORK/run"
echo "stage-tiktoken-suite: tiktoken $VERSION tests against cybpe ($("$PY" -c 'import cybpe; print(cybpe.__version__, cybpe.__file__)'))"
CYBPE_ENCODINGS_DIR="$VOCAB" TIKTOKEN_CACHE_DIR="" PYTHONPATH="$WORK/shim" \
    "$PY" -m pytest -q -p no:cacheprovider -p no:randomly tests --import-mode=append
