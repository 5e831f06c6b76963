#!/bin/bash
# Ours, not Metacontroller's: the catset example's controller (its v1/
# kustomization, its sync.js) re-imaging a CatSet of 3 Pods, run in the
# example's directory like its test.sh, under each engine. A rolling update
# (RollingRecreate behind a Ready check) must replace one Pod at a time, in
# the hook's order, and end on one ControllerRevision with the CatSet's
# `Updated` condition `OnLatestRevision`.
set -euo pipefail

cs=catsets
pods=(nginx-backend-0 nginx-backend-1 nginx-backend-2)
selector=app=nginx,component=backend

cleanup() {
  set +e
  kubectl delete -f my-catset.yaml --wait=false
  kubectl patch $cs nginx-backend --type=merge -p '{"metadata":{"finalizers":[]}}'
  kubectl delete po,pvc -l $selector
  kubectl delete -k v1
}
trap cleanup EXIT

kubectl apply -k v1
until kubectl get $cs; do sleep 1; done
kubectl apply -f my-catset.yaml
until [[ "$(kubectl get $cs nginx-backend -o 'jsonpath={.status.readyReplicas}')" -eq 3 ]]; do sleep 1; done
old="$(kubectl get pod nginx-backend-0 -o 'jsonpath={.spec.containers[0].image}')"
new=nginx:1.27.3
[[ "$old" != "$new" ]]

echo "Re-image the CatSet..."
kubectl patch $cs nginx-backend --type=json \
  -p '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"'$new'"}]'

# Each Pod as "name image ready deleting", every half second, until all
# three run the new image and are Ready (bounded: 240 looks, 2 minutes).
# Metacontroller v4.17.2 stalls after its first move: its rollout looks
# children up by bare name in a map keyed namespace/name, and so reports
# the moved Pod missing while it is there (said below, and expected).
order=()
stalled=0
for _ in $(seq 240); do
  view="$(kubectl get pods -l $selector -o go-template='{{range .items}}{{.metadata.name}} {{(index .spec.containers 0).image}} {{range .status.conditions}}{{if eq .type "Ready"}}{{.status}}{{end}}{{end}} {{if .metadata.deletionTimestamp}}deleting{{else}}live{{end}}
{{end}}')"
  # At most one Pod is away (missing, going, or not Ready) at any look.
  up=$(awk '$3 == "True" && $4 == "live"' <<<"$view" | wc -l)
  if (( up < 2 )); then
    echo "more than one Pod away at once:"; echo "$view"; exit 1
  fi
  for p in "${pods[@]}"; do
    if awk -v p="$p" -v img="$new" '$1 == p && $2 == img && $4 == "live"' <<<"$view" | grep -q . \
      && [[ " ${order[*]} " != *" $p "* ]]; then
      order+=("$p")
    fi
  done
  message="$(kubectl get $cs nginx-backend -o 'jsonpath={.status.conditions[?(@.type=="Updated")].message}')"
  missing="${message#missing child Pod }"
  if [[ "$missing" != "$message" ]] && awk -v p="$missing" '$1 == p && $3 == "True" && $4 == "live"' <<<"$view" | grep -q .; then
    stalled=$((stalled + 1))
  else
    stalled=0
  fi
  if (( stalled >= 20 )); then
    echo "stalled: the CatSet's Updated condition says 'missing child Pod $missing' while it is there and Ready"
    exit 1
  fi
  done_=$(awk -v img="$new" '$2 == img && $3 == "True" && $4 == "live"' <<<"$view" | wc -l)
  (( done_ == 3 )) && break
  sleep 0.5
done
echo "Pods on the new image, in order: ${order[*]}"
[[ "${order[*]}" == "${pods[*]}" ]] || { echo "expected ${pods[*]}"; exit 1; }

echo "Wait for the rollout's end in the CatSet's status..."
for _ in $(seq 60); do
  reason="$(kubectl get $cs nginx-backend -o 'jsonpath={.status.conditions[?(@.type=="Updated")].reason}')"
  [[ "$reason" == OnLatestRevision ]] && break
  sleep 1
done
[[ "$reason" == OnLatestRevision ]] || { echo "Updated is ${reason:-absent}"; exit 1; }
revisions="$(kubectl get controllerrevisions.metacontroller.k8s.io -l $selector -o name | wc -l)"
[[ "$revisions" -eq 1 ]] || { echo "$revisions ControllerRevisions left, expected 1"; exit 1; }
echo "Rolled one Pod at a time; one ControllerRevision left."
