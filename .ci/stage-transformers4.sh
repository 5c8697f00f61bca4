#!/usr/bin/env bash
# CI stage: the transformers tests again under transformers 4.x (the test extra has 5.x; the two
# majors cannot share one environment).
#
#   bash .ci/stage-transformers4.sh PYTHON SHARED
#
# PYTHON: the python of a venv with cybpe installed (CI: the wheel venv). The stage makes a
# fresh venv, copies that venv's cybpe install into it file by file (the files its RECORD lists
# inside site-packages: for CI's wheel, exactly the installed wheel; for an editable install,
# its finder), installs cybpe's runtime requirements pinned to the versions that venv has, plus
# `transformers>=4.57,<5` (no torch), jinja2 (chat templates), pytest and hypothesis (tests/support.py), and runs the full run
# (--full) of tests/compat/test_transformers_*.py and tests/formats/test_transformers_dir.py
# from a copy of the checkout's tests (outside the checkout, so that its uncompiled sources
# cannot shadow the installed package). SHARED: the shared corpora folder, or empty (the tests
# that need the real folders then skip). Network: PyPI only, for the pip install.
#
# CYBPE_TF4_VENV=DIR (for a developer): build the venv in DIR and reuse it on later calls.
set -euo pipefail
PYTHON="${1:?usage: bash .ci/stage-transformers4.sh PYTHON SHARED}"
SHARED="${2-}"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
START=$SECONDS
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cybpe-tf4.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
VENV="${CYBPE_TF4_VENV:-$WORK/venv}"
TRANSFORMERS="transformers>=4.57,<5"

if [ ! -x "$VENV/bin/pytest" ]; then
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    # (-I, from the scratch folder: the checkout's own metadata must not be found instead)
    (cd "$WORK" && "$PYTHON" -I - "$SITE" "$WORK/requirements.txt") <<'PY'
import importlib.metadata as md, os, shutil, sys

site, requirements = sys.argv[1:]
dist = md.distribution("cybpe")
record = dist.read_text("RECORD") or ""
copied = 0
for line in record.splitlines():
    name = line.rsplit(",", 2)[0]
    if not name or name.startswith("..") or os.path.isabs(name) or "__pycache__" in name:
        continue  # the console script (outside site-packages) and byte code
    source = dist.locate_file(name)
    target = os.path.join(site, name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copy2(source, target)
    copied += 1
# The runtime requirements only (no extra): regex, numpy, pluggy, orjson.
runtime = [r for r in (dist.requires or []) if "extra ==" not in r]
with open(requirements, "w") as f:
    f.write("\n".join(runtime) + "\n")
print(f"stage-transformers4: copied {copied} files of cybpe {dist.version} from {dist.locate_file('')}")
PY
    # What the cybpe venv has, as constraints (the same regex: cybpe refuses another Unicode
    # version; the same numpy it was built against), less the three packages 4.x needs older.
    "$PYTHON" -m pip freeze --exclude-editable \
        | grep -v -i -e '^-e ' -e ' @ ' -e '^cybpe==' -e '^transformers==' -e '^tokenizers==' -e '^huggingface[-_]hub==' \
        > "$WORK/constraints.txt" || true
    "$VENV/bin/python" -m pip install --quiet -c "$WORK/constraints.txt" -r "$WORK/requirements.txt" \
        "$TRANSFORMERS" jinja2 "pytest>=7.4" "pytest-xdist>=3.5" "hypothesis>=6.80"
fi
(cd "$WORK" && "$VENV/bin/python" -c "import cybpe, transformers; print('stage-transformers4: cybpe', cybpe.__version__, 'from', cybpe.__file__, '| transformers', transformers.__version__)")
"$VENV/bin/python" -c "import transformers, sys; sys.exit(0 if transformers.__version__.startswith('4.') else 'transformers 4.x expected, found ' + transformers.__version__)"

# The tests, outside the checkout (tests/ reads pyproject.toml's pytest settings and README.md).
mkdir -p "$WORK/suite"
cp -r "$REPO/tests" "$REPO/pyproject.toml" "$REPO/README.md" "$WORK/suite/"
cd "$WORK/suite"
mapfile -t FILES < <(ls tests/compat/test_transformers_*.py tests/formats/test_transformers_dir.py)
echo "stage-transformers4: ${FILES[*]}"
# CYBPE_TEST_INSTALLED: conftest.py refuses a cybpe imported from anywhere but site-packages
# (an editable install's finder imports from the source tree: not set for one).
INSTALLED=1
"$VENV/bin/python" -c "import cybpe, sys, sysconfig, pathlib; sys.exit(pathlib.Path(cybpe.__file__).resolve().parents[1] != pathlib.Path(sysconfig.get_paths()['purelib']).resolve())" || INSTALLED=0
code=0
CYBPE_SHARED="$SHARED" CYBPE_TEST_INSTALLED=$INSTALLED HF_HUB_OFFLINE=1 \
    "$VENV/bin/pytest" -q -n auto -p no:cacheprovider --full "${FILES[@]}" || code=$?
echo "stage-transformers4: pytest exited with $code in $((SECONDS - START)) s"
exit "$code"
