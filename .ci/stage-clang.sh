#!/usr/bin/env bash
# CI stage "clang": cybpe built with clang instead of gcc (issue 40; Apple's compiler on macOS is
# clang, and so is the default of several Linux and BSD systems), once from this checkout, then
# the core suite against it. Needs clang (.ci/run installs Debian's: APT_PACKAGES).
#
#   bash .ci/stage-clang.sh PYTHON [SHARED]
#
# PYTHON: a venv's python with cybpe's test tools (CI passes the wheel venv's; it is left
# unchanged). SHARED: the shared corpora folder, or empty. Measured: see docs/platforms.md.
set -euo pipefail
PYTHON="${1:?usage: bash .ci/stage-clang.sh PYTHON [SHARED]}"
SHARED="${2-}"
command -v clang >/dev/null || { echo "stage-clang: no clang (apt-get install clang)" >&2; exit 1; }
# shellcheck source=lib/variant.sh
. "$(dirname "$0")/lib/variant.sh"
# setuptools compiles with $CC and links with $LDSHARED (both default to the compiler Python was
# built with).
export CC=clang LDSHARED="clang -shared"
variant_run clang "$PYTHON" "$SHARED" 'info["builtins"] == "gnu" and "clang" in info["compiler"].lower()'
