# Shared by the interop scripts (sourced): where the peer (the real
# Kubernetes v1.36.2 control plane, ../shared/peer) and berth run, on ports
# of their own so that another peer on the defaults is left alone.
# Development-machine runs only: CI cannot build the peer.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# The peer's scripts and harness (run-cluster.sh, harness/bench.py, create.lua).
PEER_SCRIPTS=${PEER_SCRIPTS:-$( [ -d "$ROOT/../shared/peer" ] && cd "$ROOT/../shared/peer" && pwd || echo /work/shared/peer)}
PEER=${PEER:-${TMPDIR:-/tmp}/berth-peer}
export PEER RUN=${RUN:-$PEER/run-interop} PORT=${PORT:-17443} ETCD_PORT=${ETCD_PORT:-13379} \
  SCHED_PORT=${SCHED_PORT:-21259} KCM_PORT=${KCM_PORT:-21257}
RC=$PEER_SCRIPTS/run-cluster.sh
HARNESS=$PEER_SCRIPTS/harness
BIN_PEER=${BIN:-$PEER/bin}
BERTH=${BERTH:-$ROOT/target/release/berth}
BERTH_PORT=${BERTH_PORT:-19443}
BERTH_RUN=${BERTH_RUN:-$PEER/berth-interop}
# What every run's line starts with: the machine is shared, so its load goes with each figure.
load() { cut -d' ' -f1-3 /proc/loadavg; }
ts() { date +%s.%N; }
since() { echo "$(ts) - $1" | bc; }
cpu_s() { awk '{printf "%.1f", ($14+$15)/100}' /proc/$1/stat 2>/dev/null || echo NA; }
rss_mib() { awk '/VmRSS/{printf "%.0f", $2/1024}' /proc/$1/status 2>/dev/null || echo NA; }

peer_start() { # extra KCM flags (none: no KCM)
  $RC wipe >/dev/null 2>&1 || true
  $RC start-etcd >/dev/null
  $RC start-apiserver | grep ready
  if [ $# -gt 0 ]; then $RC start-kcm "$@" >/dev/null; fi
}
peer_stop() { $RC stop >/dev/null 2>&1 || true; }
peer_admin() { echo "$RUN/admin.kubeconfig"; }

berth_start() { # extra berth server flags
  berth_stop
  rm -rf "$BERTH_RUN"; mkdir -p "$BERTH_RUN"
  berth_restart "$@"
}
berth_restart() { # extra flags; keeps the data dir
  local t0; t0=$(ts)
  "$BERTH" server --data-dir "$BERTH_RUN/d" --listen 127.0.0.1:$BERTH_PORT "$@" >> "$BERTH_RUN/log" 2>&1 &
  echo $! > "$BERTH_RUN/pid"
  for _ in $(seq 1 3000); do
    kill -0 "$(cat "$BERTH_RUN/pid")" 2>/dev/null || { echo "berth server exited: $(tail -1 "$BERTH_RUN/log")"; exit 1; }
    [ -f "$BERTH_RUN/d/admin-token" ] && curl -s --cacert "$BERTH_RUN/d/ca.crt" --max-time 2 \
      -H "Authorization: Bearer $(cat "$BERTH_RUN/d/admin-token")" https://127.0.0.1:$BERTH_PORT/readyz 2>/dev/null | grep -q '^ok' && break
    sleep 0.05
  done
  echo "berth ready after $(since "$t0") s"
}
berth_stop() {
  [ -f "$BERTH_RUN/pid" ] || return 0
  local p; p=$(cat "$BERTH_RUN/pid")
  if kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p"
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p"
  fi
  rm -f "$BERTH_RUN/pid"
}
berth_pid() { cat "$BERTH_RUN/pid"; }
berth_admin() { echo "$BERTH_RUN/d/kubeconfig.yaml"; }

stop_pid() { # pid : TERM, then KILL after 10 s
  kill -0 "$1" 2>/dev/null || return 0
  kill -TERM "$1"
  for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$1"
}
