#!/usr/bin/env bash
# Runs the bundled driver's e2e target against fakeapi, an in-memory API
# server (not Kubernetes): ../shared/fakeapi/fakeapi.py beside the clone.
# Skips loudly, and succeeds, when fakeapi is not there.
set -euo pipefail

root="$(git rev-parse --show-toplevel)"
fakeapi="${FAKEAPI:-$root/../shared/fakeapi/fakeapi.py}"
if [[ ! -f "$fakeapi" ]]; then
  echo "*** SKIPPED: fakeapi not found at $fakeapi; the bundled-driver e2e did not run." >&2
  exit 0
fi

work="$(mktemp -d)"
crd_args=()
for crd in "$root"/crds/*.yaml; do crd_args+=(--crd "$crd"); done

python3 "$fakeapi" --port 0 --kubeconfig "$work/kubeconfig" "${crd_args[@]}" \
  >"$work/fakeapi.out" 2>"$work/fakeapi.err" &
fake_pid=$!
cleanup() {
  kill "$fake_pid" 2>/dev/null || true
  wait "$fake_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# fakeapi prints KUBECONFIG=... and PORT=... once it listens.
for _ in $(seq 1 100); do
  grep -q '^PORT=' "$work/fakeapi.out" 2>/dev/null && break
  if ! kill -0 "$fake_pid" 2>/dev/null; then
    cat "$work/fakeapi.err" >&2
    echo "fakeapi exited before listening" >&2
    exit 1
  fi
  sleep 0.1
done
grep -q '^PORT=' "$work/fakeapi.out" || { echo "fakeapi did not start" >&2; exit 1; }
echo "fakeapi on port $(sed -n 's/^PORT=//p' "$work/fakeapi.out") (an in-memory API server, not Kubernetes)"

export METAHOOK_E2E_KUBECONFIG="$work/kubeconfig"
cd "$root"
cargo test --test e2e_driver -- --nocapture "$@"
