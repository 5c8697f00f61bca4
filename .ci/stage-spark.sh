#!/usr/bin/env bash
# CI stage: cybpe.spark on a real local[2] Spark session (tests/spark/test_spark.py).
#
#   bash .ci/stage-spark.sh PYTHON [SHARED]
#
# PYTHON: the python of a venv with cybpe[test] installed (CI's wheel venv). The stage installs
# the `spark` extra's requirements into that venv (pyspark: ~300 MB, kept out of the test extra
# so that the other venvs do not download it; the tests must see the installed cybpe, which a
# second venv would not pass CYBPE_TEST_INSTALLED's check with), installs a Java runtime from
# Debian when `java` is missing (Spark 4 needs 17 or 21), and runs the Spark tests from a
# scratch folder against the installed cybpe.
# SHARED (the shared corpora folder, or empty) is passed on as CYBPE_SHARED; the tests do not
# need it.
set -euo pipefail
PYTHON="${1:?usage: bash .ci/stage-spark.sh PYTHON [SHARED]}"
SHARED="${2-}"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
START=$SECONDS
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cybpe-spark.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

if ! command -v java >/dev/null 2>&1; then
    echo "spark: no java on PATH: installing a JRE from Debian"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless \
        || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends default-jre-headless
fi
java -version 2>&1 | head -1

# The spark extra's requirements, read from pyproject.toml (one list, kept there), installed into
# PYTHON's venv with what it has pinned (pyarrow, numpy: the versions the suite ran with).
mapfile -t REQUIREMENTS < <("$PYTHON" - "$REPO/pyproject.toml" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["spark"]))
PY
)
"$PYTHON" -m pip freeze --exclude-editable | grep -v -e '^-e ' -e ' @ ' -e '^cybpe' > "$WORK/constraints.txt" || true
"$PYTHON" -m pip install --quiet -c "$WORK/constraints.txt" "${REQUIREMENTS[@]}"
(cd "$WORK" && "$PYTHON" -c "import pyspark, cybpe; print('spark: pyspark', pyspark.__version__, '| cybpe', cybpe.__version__, 'from', cybpe.__file__)")

# The tests and their helpers, outside the checkout: the repository root on sys.path would put
# the uncompiled cybpe/ in front of the installed one (CYBPE_TEST_INSTALLED refuses that).
mkdir -p "$WORK/suite"
# README.md and docs/: the Spark recipe of docs/guide/datasets.md (marked `needs: pyspark`, so
# the main suite skips it) runs here, with the other blocks of that page.
cp -r "$REPO/tests" "$REPO/pyproject.toml" "$REPO/README.md" "$REPO/docs" "$WORK/suite/"
code=0
(cd "$WORK/suite" && CYBPE_SHARED="$SHARED" CYBPE_TEST_INSTALLED=1 PYSPARK_PYTHON="$PYTHON" \
    "$PYTHON" -m pytest -q -p no:cacheprovider -p no:xdist tests/spark tests/docs/test_code_blocks.py -k "spark or datasets") || code=$?
if [ "$code" -ne 0 ]; then echo "spark: pytest exited with $code" >&2; exit "$code"; fi
echo "spark: done in $((SECONDS - START)) s"
