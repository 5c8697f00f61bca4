#!/usr/bin/env bash
# Stage "fuzz": the bounded-time hypothesis fuzzer over every file loader (issue 39).
#
#   bash .ci/stage-fuzz.sh <venv python> <shared dir>
#
# Runs tests/io/test_fuzz_round2.py (marked slow) from this checkout against the cybpe that the
# given python imports. CYBPE_FUZZ_SECONDS is the budget per file format (11 formats x 10 s) and
# CYBPE_FUZZ_EXAMPLES caps the examples per format, the ones generated after the budget is spent
# included (they pass at once); measured: 73 s on a shared 2-core machine. `timeout` is a second
# bound, should an example hang despite the tests' own 20 s alarms. Exit status: pytest's.
set -euo pipefail
PY=${1:?usage: stage-fuzz.sh <venv python> <shared dir>}
SHARED=${2-}   # may be empty: the fuzzer needs no shared file
cd "$(dirname "$0")/.."
export CYBPE_SHARED="$SHARED" CYBPE_FUZZ_SECONDS="${CYBPE_FUZZ_SECONDS:-10}" CYBPE_FUZZ_EXAMPLES="${CYBPE_FUZZ_EXAMPLES:-1000}"
exec timeout 175 "$PY" -m pytest -q -p no:cacheprovider -m slow tests/io/test_fuzz_round2.py
