#!/usr/bin/env bash
# The Prometheus Operator CRDs the chart's monitoring objects need (ServiceMonitor, PodMonitor,
# PrometheusRule), at the operator version the chart is tested against.
#
#   scripts/monitoring-crds.sh <outdir>
#
# Writes <outdir>/monitoring.coreos.com_{servicemonitors,podmonitors,prometheusrules}.yaml and
# prints their paths, one per line. The files come from the operator's Go module
# (example/prometheus-operator-crd/), fetched with `go mod download` through the Go module proxy.
# Idempotent: files already in <outdir> at this version are kept, and once they are there (or the
# module is in the Go module cache) no network is used. Install them into a cluster with
#   kubectl apply --server-side -f <outdir>/monitoring.coreos.com_servicemonitors.yaml ...
# The chart tests validate the rendered monitoring objects against these CRDs' schemas.
set -euo pipefail

# The one place the operator version is pinned.
PROMETHEUS_OPERATOR_VERSION=v0.85.0
MODULE=github.com/prometheus-operator/prometheus-operator
CRDS=(servicemonitors podmonitors prometheusrules)

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 <outdir>" >&2
  exit 2
fi
outdir="$1"
marker="operator.prometheus.io/version: ${PROMETHEUS_OPERATOR_VERSION#v}"

file_of() { echo "$outdir/monitoring.coreos.com_$1.yaml"; }

current=1
for crd in "${CRDS[@]}"; do
  grep -qF "$marker" "$(file_of "$crd")" 2>/dev/null || current=0
done

if [ "$current" -eq 0 ]; then
  if ! command -v go >/dev/null 2>&1; then
    echo "monitoring-crds: go is needed to fetch $MODULE@$PROMETHEUS_OPERATOR_VERSION through the Go module proxy" >&2
    exit 1
  fi
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  # Outside any module, so no go.mod is read or changed.
  if ! (cd "$scratch" && go mod download -json "$MODULE@$PROMETHEUS_OPERATOR_VERSION") >"$scratch/download.json"; then
    echo "monitoring-crds: go mod download $MODULE@$PROMETHEUS_OPERATOR_VERSION failed:" >&2
    cat "$scratch/download.json" >&2
    exit 1
  fi
  dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' "$scratch/download.json")"
  source_dir="$dir/example/prometheus-operator-crd"
  mkdir -p "$outdir"
  for crd in "${CRDS[@]}"; do
    source="$source_dir/monitoring.coreos.com_$crd.yaml"
    if ! grep -qF "$marker" "$source" 2>/dev/null; then
      echo "monitoring-crds: $source is missing or not at $PROMETHEUS_OPERATOR_VERSION" >&2
      exit 1
    fi
    # The module cache is read-only: copy the bytes into a writable file, then rename it into
    # place so a concurrent run never reads half a file.
    target="$(file_of "$crd")"
    cat "$source" >"$target.tmp.$$"
    mv -f "$target.tmp.$$" "$target"
  done
  echo "monitoring-crds: wrote the $MODULE $PROMETHEUS_OPERATOR_VERSION CRDs into $outdir" >&2
fi

for crd in "${CRDS[@]}"; do
  file_of "$crd"
done
