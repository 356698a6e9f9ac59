#!/usr/bin/env bash
# `make run`: the simulator and the gateway (examples/quickstart/config.yaml) on 127.0.0.1. The
# banner is printed once both answer: the simulator's /health and the gateway's admin /readyz.
# When either cannot start, it says which, with its exit code and last output lines, stops the
# other and exits 1. Ctrl-C or SIGTERM stops both.
#
#   SIM_PORT=8000              the simulator
#   GATEWAY_PORT=3000          the gateway's proxy port
#   GATEWAY_METRICS_PORT=9090  the gateway's admin port (/metrics, /healthz, /readyz)
#   CONFIG=examples/quickstart/config.yaml
#   READY_TIMEOUT_SECS=30      how long both may take to become ready
set -euo pipefail
cd "$(dirname "$0")/.."

DEFAULT_CONFIG=examples/quickstart/config.yaml
SIM_PORT=${SIM_PORT:-8000}
GATEWAY_PORT=${GATEWAY_PORT:-3000}
ADMIN_PORT=${GATEWAY_METRICS_PORT:-9090}
CONFIG=${CONFIG:-$DEFAULT_CONFIG}
READY_TIMEOUT_SECS=${READY_TIMEOUT_SECS:-30}
TAIL_LINES=20

say() { echo "quickstart: $*" >&2; }
die() {
  say "$*"
  exit 1
}

for check in "SIM_PORT $SIM_PORT" "GATEWAY_PORT $GATEWAY_PORT" "GATEWAY_METRICS_PORT $ADMIN_PORT"; do
  read -r var value <<<"$check"
  if ! [[ $value =~ ^[0-9]{1,5}$ ]] || ((10#$value < 1 || 10#$value > 65535)); then
    die "$var must be a port number from 1 to 65535, got '$value'"
  fi
done
SIM_PORT=$((10#$SIM_PORT)) GATEWAY_PORT=$((10#$GATEWAY_PORT)) ADMIN_PORT=$((10#$ADMIN_PORT))
if ((SIM_PORT == GATEWAY_PORT || SIM_PORT == ADMIN_PORT || GATEWAY_PORT == ADMIN_PORT)); then
  die "SIM_PORT ($SIM_PORT), GATEWAY_PORT ($GATEWAY_PORT) and GATEWAY_METRICS_PORT ($ADMIN_PORT) must differ"
fi
[[ $READY_TIMEOUT_SECS =~ ^[0-9]+$ ]] || die "READY_TIMEOUT_SECS must be a whole number of seconds, got '$READY_TIMEOUT_SECS'"
[[ -r $CONFIG ]] || die "cannot read the gateway configuration CONFIG=$CONFIG"

# Run directly (not through make), the node on PATH may be the machine's older one.
# 22.19 is the oldest the dependencies accept (bin/preflight.js).
node_version=$(node -p 'process.versions.node' 2>/dev/null) || die "node is not on PATH: run 'make run', which uses the project's Node"
IFS=. read -r node_major node_minor _ <<<"$node_version"
((node_major > 22 || (node_major == 22 && ${node_minor:-0} >= 19))) ||
  die "node $node_version is older than 22.19: run 'make run', which uses the project's Node (or put Node 22.19 or newer first on PATH)"
[[ -f dist/simulator/cli.js && -f dist/gateway/cli.js ]] || die "dist/ is not built: run 'make run', which builds first (or 'make build')"

# A port someone already listens on would make that process fail, or, worse, answer the readiness
# check in its place: an earlier `make run` still running is the usual cause.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for check in "simulator $SIM_PORT SIM_PORT" "gateway $GATEWAY_PORT GATEWAY_PORT" "gateway $ADMIN_PORT GATEWAY_METRICS_PORT"; do
  read -r who port var <<<"$check"
  if port_in_use "$port"; then
    die "the $who cannot start: port $port ($var) is already in use on 127.0.0.1 (an earlier 'make run' still running?). Stop that process, or choose another port: $var=<port> make run"
  fi
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/quickstart.XXXXXX")
SIM_LOG=$WORK/sim.log
GATEWAY_LOG=$WORK/gateway.log
: >"$SIM_LOG"
: >"$GATEWAY_LOG"

# The quickstart configuration names the simulator on its default port.
shown_config=$CONFIG
if [[ $CONFIG == "$DEFAULT_CONFIG" && $SIM_PORT != 8000 ]]; then
  sed "s#http://127.0.0.1:8000/#http://127.0.0.1:$SIM_PORT/#g" "$CONFIG" >"$WORK/config.yaml"
  shown_config="$CONFIG, its simulator URLs on port $SIM_PORT"
  CONFIG=$WORK/config.yaml
fi

sim_pid=
gateway_pid=
tail_pid=
sleep_pid=
stopping=
# The last lines (shutdown logs, a failure) reach the terminal before the output stops.
stop_tail() {
  if [[ -n $tail_pid ]]; then
    sleep 0.2
    # One or two pids, split into words on purpose.
    kill $tail_pid 2>/dev/null || true
    wait $tail_pid 2>/dev/null || true
    tail_pid=
  fi
}
stop() {
  [[ -z $stopping ]] || return 0
  stopping=1
  # A second Ctrl-C while the gateway drains ends both at once.
  trap 'kill -KILL $gateway_pid $sim_pid 2>/dev/null || true' INT TERM
  for pid in $sleep_pid $gateway_pid $sim_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $sleep_pid $gateway_pid $sim_pid; do wait "$pid" 2>/dev/null || true; done
  stop_tail
  rm -rf "$WORK"
}
trap stop EXIT
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM

# Each process writes to its own log, so a failure can quote it; tail shows them as they run. The
# gateway's is shown once it is ready (from its first line): a gateway that cannot start is quoted
# once, by `ended`, rather than shown and then quoted again.
show_log() {
  tail -q -n +1 -f "$1" &
  tail_pid="$tail_pid $!"
}
show_log "$SIM_LOG"

node bin/sim.js serve --host 127.0.0.1 --port "$SIM_PORT" >>"$SIM_LOG" 2>&1 &
sim_pid=$!
# The Node.js flags and malloc setting the image ships with (Dockerfile NODE_OPTIONS and
# MALLOC_ARENA_MAX), unless set in the environment.
NODE_OPTIONS=${NODE_OPTIONS:---max-semi-space-size=16} MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-1} \
  node bin/gateway.js --targets "$CONFIG" \
  --host 127.0.0.1 --port "$GATEWAY_PORT" --metrics-port "$ADMIN_PORT" --shutdown-delay-secs 0 \
  >>"$GATEWAY_LOG" 2>&1 &
gateway_pid=$!

# A program's last lines. A program that says why it failed in plain lines (the gateway's
# configuration errors) also logs it as JSON for log processors: the plain lines are quoted then.
last_lines() {
  if grep -qv '^{' "$1"; then
    grep -v '^{' "$1" | tail -n "$TAIL_LINES" | sed 's/^/  | /' >&2
  else
    tail -n "$TAIL_LINES" "$1" | sed 's/^/  | /' >&2
  fi
}
# Says which process ended, with its exit code and last lines, and exits 1; the EXIT trap stops the
# other one. Once both ran, one that stopped cleanly or by SIGINT or SIGTERM was stopped from outside:
# a Ctrl-C, or a supervisor or `timeout` signalling the whole process group, which reaches the two
# programs as well as this script. That is a normal stop: both are stopped and the exit code is
# 130, as for a Ctrl-C this script hears first.
ended() {
  local who=$1 when=$2 pid log code=0
  if [[ $who == simulator ]]; then pid=$sim_pid log=$SIM_LOG sim_pid=; else pid=$gateway_pid log=$GATEWAY_LOG gateway_pid=; fi
  wait "$pid" 2>/dev/null || code=$?
  if [[ $when == "while running" ]] && ((code == 0 || code == 130 || code == 143)); then
    say "the $who was stopped by a signal; stopping both"
    exit 130
  fi
  stop_tail
  say "the $who exited with code $code $when; its last output lines:"
  last_lines "$log"
  if grep -q EADDRINUSE "$log"; then
    say "a port is in use: choose free ones with SIM_PORT, GATEWAY_PORT and GATEWAY_METRICS_PORT"
  fi
  exit 1
}
alive() { kill -0 "$1" 2>/dev/null; }
both_alive() {
  alive "$sim_pid" || ended simulator "$1"
  alive "$gateway_pid" || ended gateway "$1"
}
answers() {
  node -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then(
    (r) => process.exit(r.ok ? 0 : 1),
    () => process.exit(1),
  )' "$1" 2>/dev/null
}

sim_url=http://127.0.0.1:$SIM_PORT/health
gateway_url=http://127.0.0.1:$ADMIN_PORT/readyz
sim_ready=
gateway_ready=
deadline=$((SECONDS + READY_TIMEOUT_SECS))
while :; do
  both_alive "before it was ready"
  if [[ -z $sim_ready ]] && answers "$sim_url"; then sim_ready=1; fi
  if [[ -z $gateway_ready ]] && answers "$gateway_url"; then gateway_ready=1; fi
  if [[ -n $sim_ready && -n $gateway_ready ]]; then
    # Neither exited while the other was being checked.
    both_alive "before it was ready"
    break
  fi
  if ((SECONDS >= deadline)); then
    stop_tail
    if [[ -z $sim_ready ]]; then
      say "the simulator is running but $sim_url did not answer 200 within ${READY_TIMEOUT_SECS}s (READY_TIMEOUT_SECS); its last output lines:"
      last_lines "$SIM_LOG"
    fi
    if [[ -z $gateway_ready ]]; then
      say "the gateway is running but $gateway_url did not answer 200 within ${READY_TIMEOUT_SECS}s (READY_TIMEOUT_SECS); its last output lines:"
      last_lines "$GATEWAY_LOG"
    fi
    exit 1
  fi
  sleep 0.2
done

cat >&2 <<BANNER

  simulator  http://127.0.0.1:$SIM_PORT/v1
  gateway    http://127.0.0.1:$GATEWAY_PORT/v1   (config: $shown_config)
  admin      http://127.0.0.1:$ADMIN_PORT/metrics  /healthz  /readyz

  Try:
    curl -s http://127.0.0.1:$GATEWAY_PORT/v1/chat/completions \\
      -H 'content-type: application/json' \\
      -d '{"model":"sim","messages":[{"role":"user","content":"Hello"}]}'

  Ctrl-C stops both.

BANNER
show_log "$GATEWAY_LOG"

# Until either exits or a signal stops both; the sleep runs in the background so a trap runs at once.
while alive "$sim_pid" && alive "$gateway_pid"; do
  sleep 1 &
  sleep_pid=$!
  wait "$sleep_pid" || true
  sleep_pid=
done
both_alive "while running"
