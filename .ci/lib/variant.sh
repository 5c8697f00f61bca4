# Shared by .ci/stage-portable.sh and .ci/stage-clang.sh (sourced, not a stage of its own):
# build cybpe once from this checkout with other compiler settings, install it in a venv of its
# own, check what the build chose (cybpe._c.build_info), and run the core suite against it.
#
#   variant_run LABEL PYTHON SHARED EXPECT
#
# The caller exports the build's settings first (CC, CFLAGS, CYBPE_PORTABLE, ...). PYTHON is the
# python of a venv with cybpe's test tools (CI passes the wheel venv's): the variant's venv sees
# its packages through a .pth line (as .ci/stage-docs.sh does), so nothing is downloaded, and it
# is left unchanged. The build starts from a copy of the tracked and new files (no build/ folder,
# no generated C or objects of another build can be reused). EXPECT: a Python expression over
# `info` (the build_info() dict) that must hold, e.g. 'info["simd"] == "scalar"'. The core suite
# is .ci/run's CORE_TESTS, run as .ci/run runs it (from a folder with the tests but not the
# package sources, CYBPE_TEST_INSTALLED=1) on every core.
variant_run() {
    local label="$1" python="$2" shared="$3" expect="$4"
    local repo work cybpe_site own_site code=0 start=$SECONDS
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    work="$(mktemp -d "${TMPDIR:-/tmp}/cybpe-$label.XXXXXX")"
    # shellcheck disable=SC2064
    trap "rm -rf '$work'" EXIT
    eval "$(sed -n '/^CORE_TESTS=(/,/)/p' "$repo/.ci/run")"

    mkdir -p "$work/src" "$work/suite"
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/src" 2>/dev/null || true)
    (cd "$work/src" && cp -r tests pyproject.toml README.md bench docs "$work/suite/")

    "$python" -m venv "$work/venv"
    cybpe_site="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    own_site="$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "import site; site.addsitedir('$cybpe_site')" > "$own_site/zz-cybpe-venv.pth"

    # The build requirements of pyproject.toml, in the variant's venv (the test venv's setuptools
    # can be older than the build needs).
    mapfile -t requires < <("$work/venv/bin/python" - "$repo/pyproject.toml" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))
PY
    )
    "$work/venv/bin/python" -m pip install --quiet "${requires[@]}"
    echo "build ($label): CC=${CC:-} CFLAGS=${CFLAGS:-} CYBPE_PORTABLE=${CYBPE_PORTABLE:-}"
    "$work/venv/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$work/dist" "$work/src"
    # --ignore-installed: the test venv's cybpe is visible through the .pth line, and pip would
    # take it for this build ("already satisfied") and install nothing; this installs the build
    # into the variant's own site-packages (first on sys.path) and leaves the test venv alone.
    "$work/venv/bin/python" -m pip install --quiet --no-deps --ignore-installed "$work"/dist/cybpe-*.whl
    echo "built in $((SECONDS - start)) s"
    (cd "$work" && "$work/venv/bin/python" - "$expect" <<'PY'
import sys
import cybpe
from cybpe._c.build_info import build_info
info = build_info()
print(f"cybpe {cybpe.__version__} from {cybpe.__file__}: {info}")
if not eval(sys.argv[1], {"info": info}):
    sys.exit(f"this build is not the one the stage tests: needs {sys.argv[1]}")
PY
    )
    (cd "$work/suite" && CYBPE_SHARED="$shared" CYBPE_TEST_INSTALLED=1 \
        "$work/venv/bin/python" -m pytest -q -n auto -p no:cacheprovider "${CORE_TESTS[@]}" tests/pretokenize/test_cl100k_window.py) || code=$?
    echo "stage $label: $((SECONDS - start)) s (build and core suite)"
    return "$code"
}
