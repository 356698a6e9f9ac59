#!/usr/bin/env bash
# Makes promtool available for the alert tests: prints its path on stdout and exits 0, or explains
# on stderr why it cannot and exits 1. promtool ships in Debian's "prometheus" package; CI machines
# run as root (GitHub runners have sudo), so it is installed with apt-get when missing.
set -euo pipefail

if command -v promtool >/dev/null 2>&1; then
  command -v promtool
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "promtool is missing and this machine has no apt-get: install Prometheus' promtool to run the alert tests" >&2
  exit 1
fi
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  # GitHub-hosted runners have password-less sudo; elsewhere a non-root user installs it by hand.
  if sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  else
    echo "promtool is missing and installing the Debian package 'prometheus' needs root: run 'sudo apt-get install -y prometheus'" >&2
    exit 1
  fi
fi
echo "installing promtool (Debian package prometheus) with apt-get" >&2
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2
command -v promtool
