#!/usr/bin/env bash
# The chart tests: render and lint the Helm chart with real Helm
# (helm-python-sdk) and validate every object against the Kubernetes schemas.
#
#   tests/chart/run.sh [pytest arguments]
#   tests/chart/run.sh -m cluster     # the install tests, against a control plane
#
# Offline by default: the tests marked `cluster` (test_install.py, which
# install the chart into the control plane of tests/cluster/) are deselected
# unless the arguments hold their own -m; tests/e2e/run.sh runs them with
# the control plane up.
#
# Runs pytest in a virtualenv holding the pinned tools of
# tests/chart/requirements.txt (scripts/lib/venv.sh: in the machine-wide
# cache, or $METAHOOK_VENV), prints the pass/fail counts and exits non-zero
# on any failure. Needs Python >= 3.11.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/scripts/lib/venv.sh"
python="${PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "tests/chart: Python >= 3.11 is required ($python is $("$python" -V 2>&1))" >&2
    exit 2
fi

test_venv

cd "$root"
# Metacontroller's manifests, which the tests of its mode read from its
# source (built and extracted once, into the cache; target/metacontroller/src).
tests/metacontroller/build.sh >/dev/null
marker=(-m "not cluster")
for arg in "$@"; do
    case "$arg" in -m*) marker=() ;; esac
done
status=0
"$venv/bin/python" -m pytest tests/chart -q -rs -p no:cacheprovider "${marker[@]}" "$@" || status=$?
if [ "$status" -eq 0 ]; then
    echo "tests/chart: PASS"
else
    echo "tests/chart: FAIL (pytest exit status $status)" >&2
fi
exit "$status"
