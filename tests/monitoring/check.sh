#!/usr/bin/env bash
# The monitoring the chart ships: gofmt, go vet, the Go tests and a tidy
# go.mod for tests/monitoring/ (and for the collector the tracing test
# runs, collector/), then `promtool check rules` and
# `promtool test rules` on the alerts, and every dashboard query parsed by
# Prometheus' own parser. (The rendered PrometheusRule is checked by
# tests/chart/test_monitoring.py; the names against live /metrics by the
# e2e test monitoring::.)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../cluster/go-env.sh"
bin="$("$here/build.sh")"
cd "$here"
require_gofmt tests/monitoring
# Prints what `go mod tidy` would change, and fails if anything.
go mod tidy -diff
go vet ./...
go test ./...
(cd collector && go mod tidy -diff && go vet ./...)
chart="$root/metahook/chart/monitoring"
"$bin/promtool" check rules "$chart/alerts.yaml"
"$bin/promtool" test rules alerts_test.yaml
"$bin/metricnames" -rules "$chart/alerts.yaml" -dashboard "$chart/dashboard.json" -parse-only
echo "tests/monitoring: rules checked and tested, dashboard queries parse"
