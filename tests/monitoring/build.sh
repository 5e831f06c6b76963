#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker and tester, from its Go module),
# metricnames and the OpenTelemetry Collector of collector/ (its own module)
# into target/monitoring/; go build is incremental, so a second run costs a
# second. Prints the directory.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/go-env.sh"
build_lock go-monitoring
out="$root/target/monitoring"
mkdir -p "$out"
cd "$root/tests/monitoring"
# remove_all_sd: without Prometheus' service discovery (AWS, Azure, GCE,
# Kubernetes… SDKs: most of a cold build), which checking and testing
# rules never uses; its file and http discovery stay (plugins/minimum.go).
go build -tags remove_all_sd -o "$out/promtool" github.com/prometheus/prometheus/cmd/promtool
go build -o "$out/metricnames" ./metricnames
(cd collector && go build -o "$out/collector" .)
echo "$out"
