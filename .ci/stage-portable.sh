#!/usr/bin/env bash
# CI stage "portable": the plain-C build (issue 40). CYBPE_PORTABLE=1 (no compiler builtins, no
# SIMD intrinsics: the scalar twins and plain-C definitions of cybpe/_c/portable.pxd, what MSVC on
# ARM or an unknown compiler would compile) with CFLAGS=-funsigned-char (char unsigned, as on ARM
# Linux), built once from this checkout, then the core suite against it.
#
#   bash .ci/stage-portable.sh PYTHON [SHARED]
#
# PYTHON: a venv's python with cybpe's test tools (CI passes the wheel venv's; it is left
# unchanged). SHARED: the shared corpora folder, or empty. Measured: see docs/platforms.md.
set -euo pipefail
PYTHON="${1:?usage: bash .ci/stage-portable.sh PYTHON [SHARED]}"
SHARED="${2-}"
# shellcheck source=lib/variant.sh
. "$(dirname "$0")/lib/variant.sh"
export CYBPE_PORTABLE=1 CFLAGS="${CFLAGS:+$CFLAGS }-funsigned-char"
variant_run portable "$PYTHON" "$SHARED" \
    'info["portable"] and info["builtins"] == "plain" and info["simd"] == "scalar" and not info["char_signed"]'
