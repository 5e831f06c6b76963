#!/usr/bin/env bash
# Pins the control plane to one Kubernetes release: requires
# k8s.io/kubernetes@VERSION and etcd's server at the version that release
# uses, and writes a `replace` for every staging module k8s.io/kubernetes
# requires at v0.0.0 (k8s.io/api, k8s.io/client-go, ...), generated from
# that release's own go.mod, then tidies go.mod and go.sum.
#
#   tests/cluster/pin.sh v1.37.2
#   tests/cluster/pin.sh            # the version go.mod pins now (check.sh uses this)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/go-env.sh"
dir="${PIN_DIR:-$cluster_src}"
version="${1:-$(kubernetes_version)}"
[[ "$version" =~ ^v1\.[0-9]+\.[0-9]+$ ]] || { echo "pin.sh: want a version like v1.37.2, got '$version'" >&2; exit 2; }
staging="v0.${version#v1.}"

upstream_mod="$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$version" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["GoMod"])')"

# Staging modules: replaced by ./staging/src/... in Kubernetes' own go.mod,
# required there at v0.0.0. Published as k8s.io/<name> v0.<minor>.<patch>.
mapfile -t modules < <(awk '
    /^replace \(/ {in_replace = 1; next}
    in_replace && /^\)/ {in_replace = 0}
    in_replace && $2 == "=>" && $3 ~ /^\.\/staging\// {print $1}
' "$upstream_mod")
mapfile -t required < <(awk '$2 == "v0.0.0" {print $1}' "$upstream_mod")
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2; exit}' "$upstream_mod")"
[ -n "$etcd_version" ] || { echo "pin.sh: $upstream_mod names no etcd server version" >&2; exit 1; }

args=(-require="k8s.io/kubernetes@$version" -require="go.etcd.io/etcd/server/v3@$etcd_version")
# Drop the replaces of a previous pin, then add this one's.
while read -r old; do
    [ -n "$old" ] && args+=(-dropreplace="$old")
done < <(cd "$dir" && go mod edit -json | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    print(r["Old"]["Path"])')
# A set, not `printf | grep -q`: under pipefail that pipeline fails
# whenever grep exits at its match before printf has written the rest
# (SIGPIPE), which a busy machine makes happen, and a replace went missing.
declare -A is_required=()
for r in "${required[@]}"; do is_required[$r]=1; done
count=0
for m in "${modules[@]}"; do
    if [ -n "${is_required[$m]:-}" ]; then
        args+=(-replace="$m=$m@$staging")
        count=$((count + 1))
    fi
done
(cd "$dir" && go mod edit "${args[@]}" && go mod tidy)
echo "pinned k8s.io/kubernetes $version (etcd $etcd_version) with $count staging replaces at $staging"
