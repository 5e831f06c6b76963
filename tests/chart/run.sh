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
# Creates a virtualenv at .venv (or $METAHOOK_VENV) on first use, installs the
# pinned tools from tests/chart/requirements.txt, runs pytest, prints the
# pass/fail counts and exits non-zero on any failure. Needs Python >= 3.11.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${METAHOOK_VENV:-$root/.venv}"
python="${PYTHON:-python3}"
requirements="$root/tests/chart/requirements.txt"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "tests/chart: Python >= 3.11 is required ($python is $("$python" -V 2>&1))" >&2
    exit 2
fi

if [ ! -x "$venv/bin/python" ]; then
    echo "tests/chart: creating $venv"
    "$python" -m venv "$venv"
fi

# Reinstall only when the pins change.
stamp="$venv/.chart-requirements.sha256"
wanted="$("$venv/bin/python" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$requirements")"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
    echo "tests/chart: installing $requirements"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    echo "$wanted" > "$stamp"
fi

cd "$root"
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
