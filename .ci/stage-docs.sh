#!/usr/bin/env bash
# CI stage: build the documentation site strictly (mkdocs.yml; warnings are errors).
#
#   bash .ci/stage-docs.sh PYTHON [SHARED]
#
# PYTHON: the python of a venv that has cybpe installed (the API reference reads the docstrings
# from the sources, and the docs' extension imports cybpe to check that a referenced name
# exists). The stage makes a venv of its own that sees that venv's packages, installs the `docs`
# extra's tools there (the cybpe venv is left unchanged), and runs `mkdocs build --strict` from
# the repository root into a scratch folder. SHARED (the shared corpora folder,
# or empty) is accepted for the common stage interface and not needed: the build reads no data.
# The code blocks of the pages are run by the test suite (tests/docs/test_code_blocks.py), not here.
set -euo pipefail
PYTHON="${1:?usage: bash .ci/stage-docs.sh PYTHON [SHARED]}"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
START=$SECONDS
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cybpe-docs.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# A venv of its own that also sees the cybpe venv's packages (a .pth line: site.addsitedir,
# so that venv's own .pth files, an editable install's included, are read too).
"$PYTHON" -m venv "$WORK/venv"
CYBPE_SITE="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
OWN_SITE="$("$WORK/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "import site; site.addsitedir('$CYBPE_SITE')" > "$OWN_SITE/cybpe-venv.pth"
# The docs extra's requirements, read from pyproject.toml (one list, kept there).
mapfile -t REQUIREMENTS < <("$WORK/venv/bin/python" - "$REPO/pyproject.toml" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["docs"]))
PY
)
# What the cybpe venv has stays as it is (mkdocs-material's own `regex` requirement must not
# bring another regex: import cybpe refuses one with another Unicode version).
"$PYTHON" -m pip freeze --exclude-editable | grep -v -e '^-e ' -e ' @ ' > "$WORK/constraints.txt" || true
"$WORK/venv/bin/python" -m pip install --quiet -c "$WORK/constraints.txt" "${REQUIREMENTS[@]}"
(cd "$WORK" && "$WORK/venv/bin/python" -c "import cybpe; print('docs: cybpe', cybpe.__version__, 'from', cybpe.__file__)")
# `python -I`: the repository root (the working folder) must not go on sys.path, where its
# uncompiled cybpe/ would shadow the installed package.
(cd "$REPO" && NO_MKDOCS_2_WARNING=1 "$WORK/venv/bin/python" -I -m mkdocs build --strict --site-dir "$WORK/site")
test -f "$WORK/site/index.html" && test -f "$WORK/site/api/tokenizer.html"
echo "docs: strict build ok in $((SECONDS - START)) s"
