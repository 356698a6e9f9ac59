#!/usr/bin/env bash
# `make run`: the simulator on 127.0.0.1:8000 and the gateway on 127.0.0.1:3000 (admin on 9090)
# with examples/quickstart/config.yaml. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

SIM_PORT=${SIM_PORT:-8000}
GATEWAY_PORT=${GATEWAY_PORT:-3000}
ADMIN_PORT=${GATEWAY_METRICS_PORT:-9090}
CONFIG=${CONFIG:-examples/quickstart/config.yaml}

node bin/sim.js serve --host 127.0.0.1 --port "$SIM_PORT" &
sim_pid=$!
gateway_pid=
cleanup() {
  [ -n "$gateway_pid" ] && kill -TERM "$gateway_pid" 2>/dev/null || true
  kill -TERM "$sim_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# The Node.js flags the image ships with (Dockerfile NODE_OPTIONS), unless NODE_OPTIONS is set.
NODE_OPTIONS=${NODE_OPTIONS:---max-semi-space-size=16} node bin/gateway.js --targets "$CONFIG" --host 127.0.0.1 --port "$GATEWAY_PORT" \
  --metrics-port "$ADMIN_PORT" --shutdown-delay-secs 0 &
gateway_pid=$!

for _ in $(seq 1 100); do
  if curl -fsS "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null 2>&1; then break; fi
  sleep 0.1
done

cat >&2 <<BANNER

  simulator  http://127.0.0.1:$SIM_PORT/v1
  gateway    http://127.0.0.1:$GATEWAY_PORT/v1   (config: $CONFIG)
  admin      http://127.0.0.1:$ADMIN_PORT/metrics  /healthz  /readyz

  Try:
    curl -s http://127.0.0.1:$GATEWAY_PORT/v1/chat/completions \\
      -H 'content-type: application/json' \\
      -d '{"model":"sim","messages":[{"role":"user","content":"Hello"}]}'

  Ctrl-C stops both.

BANNER
wait "$gateway_pid"
