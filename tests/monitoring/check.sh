#!/usr/bin/env bash
# The monitoring the chart ships: gofmt, go vet, the Go tests and a tidy
# go.mod for tests/monitoring/, then `promtool check rules` and
# `promtool test rules` on the alerts, and every dashboard query parsed by
# Prometheus' own parser. (The rendered PrometheusRule is checked by
# tests/chart/test_monitoring.py; the names against live /metrics by the
# e2e test monitoring::.)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../cluster/go-env.sh"
bin="$("$here/build.sh")"
cd "$here"
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
    echo "tests/monitoring: not gofmt-formatted:" >&2
    echo "$unformatted" >&2
    exit 1
fi
copy="$(mktemp -d)"
trap 'rm -rf "$copy"' EXIT
cp -r . "$copy/"
(cd "$copy" && go mod tidy)
if ! diff -u go.mod "$copy/go.mod" || ! diff -u go.sum "$copy/go.sum"; then
    echo "tests/monitoring: go.mod/go.sum are not tidy; run go mod tidy there and commit" >&2
    exit 1
fi
go vet ./...
go test ./...
chart="$root/metahook/chart/monitoring"
"$bin/promtool" check rules "$chart/alerts.yaml"
"$bin/promtool" test rules alerts_test.yaml
"$bin/metricnames" -rules "$chart/alerts.yaml" -dashboard "$chart/dashboard.json" -parse-only
echo "tests/monitoring: rules checked and tested, dashboard queries parse"
