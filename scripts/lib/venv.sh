# shellcheck shell=bash
# Sourced by the scripts that run Python with the pinned tools of
# tests/chart/requirements.txt (the chart tests, Metacontroller's examples).
# `test_venv` sets `venv` to a virtualenv holding exactly those pins,
# creating it on first use: METAHOOK_VENV if set, else one in the
# machine-wide cache (scripts/lib/cache.sh: venv/KEY), KEY a hash of the
# requirements, the interpreter's version and this file, so a changed pin
# makes a new venv and an unchanged one is reused by every clone.
#
#   test_venv --key    only prints the key
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"
source "$(dirname "${BASH_SOURCE[0]}")/build-lock.sh"
test_venv() {
    local python="${PYTHON:-python3}" requirements key
    requirements="$metahook_cache_root/tests/chart/requirements.txt"
    key="$( ("$python" -VV; cat "$requirements" "${BASH_SOURCE[0]}") | sha256sum | cut -c1-16)"
    if [ "${1:-}" = --key ]; then echo "$key"; return 0; fi
    venv="${METAHOOK_VENV:-$METAHOOK_CACHE/venv/$key}"
    [ -f "$venv/.requirements-$key" ] && return 0
    (
        build_lock "venv-$key"
        [ -f "$venv/.requirements-$key" ] && exit 0
        echo "creating $venv for $requirements" >&2
        "$python" -m venv "$venv" >&2
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
        rm -f "$venv"/.requirements-*
        touch "$venv/.requirements-$key"
        # In the cache, older venvs are of pins that are gone.
        if [ -z "${METAHOOK_VENV:-}" ]; then
            find "$METAHOOK_CACHE/venv" -mindepth 1 -maxdepth 1 ! -name "$key" -exec rm -rf {} +
        fi
    )
}
