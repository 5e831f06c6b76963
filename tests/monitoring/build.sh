#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker and tester, from its Go module),
# metricnames and the OpenTelemetry Collector of collector/ (its own module)
# into target/monitoring/; go build is incremental, so a second run costs a
# second. Prints the directory.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/go-env.sh"
out="$root/target/monitoring"
mkdir -p "$out"
cd "$root/tests/monitoring"
go build -o "$out/promtool" github.com/prometheus/prometheus/cmd/promtool
go build -o "$out/metricnames" ./metricnames
(cd collector && go build -o "$out/collector" .)
echo "$out"
