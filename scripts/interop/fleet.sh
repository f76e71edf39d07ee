#!/usr/bin/env bash
# fleet.sh N : `berth sim fleet --kubeconfig` (an admin's credential, as KWOK)
# holds N simulated nodes against the real kube-apiserver + etcd +
# kube-controller-manager (node monitor grace 50 s, upstream's default) on a
# fresh etcd. The time until every node is Ready is measured from the fleet's
# start; then the nodes are held HOLD seconds (default 600) and the verdict
# is read from the server: nodes whose Ready condition changed after the
# moment all were Ready, NodeNotReady events, and the fleet's own counters
# (late renewals, longest gap). Prints one `sample` line every 30 s (Ready
# count, load, RSS of each process) and a `verdict` line at the end.
# Env: HOLD (600), INFLIGHT (256), BERTH (target/release/berth).
. "$(dirname "$0")/common.sh"
N=${1:?usage: fleet.sh N}; HOLD=${HOLD:-600}; INFLIGHT=${INFLIGHT:-256}
echo "=== fleet n=$N hold=${HOLD}s inflight=$INFLIGHT berth=$BERTH load=$(load) $(date -u +%T)"
peer_start --node-monitor-grace-period=50s
KC=$(peer_admin)
kc() { kubectl --kubeconfig "$KC" "$@"; }
# The server's table (STATUS "Ready"), far cheaper for kubectl than -o json of every node.
ready_count() { kc get nodes --no-headers | awk '$2 == "Ready" { n++ } END { print n + 0 }'; }
rss_line() { echo "$($RC status | awk '{split($4,a,"="); printf "%s=%dMiB ", $1, a[2]/1024}')fleet=$(rss_mib "$FP")MiB"; }
FLEET_LOG=$RUN/logs/fleet.log
rm -rf "$RUN/fleet-data"
t0=$(ts)
"$BERTH" sim fleet --kubeconfig "$KC" --nodes "$N" --name-prefix "m$N-" --max-in-flight "$INFLIGHT" \
  --data-dir "$RUN/fleet-data" > "$FLEET_LOG" 2>&1 &
FP=$!
trap 'stop_pid $FP; peer_stop' EXIT
deadline=$(( $(date +%s) + 1800 ))
while :; do
  sleep 5
  kill -0 "$FP" 2>/dev/null || { echo "fleet exited: $(tail -3 "$FLEET_LOG")"; exit 1; }
  r=$(ready_count 2>/dev/null || echo 0)
  [ "$r" -ge "$N" ] && break
  [ "$(date +%s)" -gt "$deadline" ] && { echo "not all Ready after 1800 s: $r of $N"; exit 1; }
done
all_ready=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "all_ready_after_s=$(since "$t0") at $all_ready load=$(load) $(rss_line)"
fleet_cpu0=$(cpu_s "$FP")
held=0
while [ "$held" -lt "$HOLD" ]; do
  sleep 30; held=$((held + 30))
  echo "sample t=${held}s ready=$(ready_count 2>/dev/null || echo NA)/$N load=$(load) $(rss_line)"
done
transitions=$(kc get nodes -o json | jq --arg t "$all_ready" \
  '[.items[] | select(any(.status.conditions[]?; .type=="Ready" and .lastTransitionTime > $t))] | length')
not_ready_events=$(kc get events -A --field-selector reason=NodeNotReady -o json | jq '.items | length')
echo "fleet: $(grep 'berth sim:' "$FLEET_LOG" | tail -1)"
echo "fleet_cpu_in_hold_s=$(echo "$(cpu_s "$FP") - $fleet_cpu0" | bc)"
echo "verdict n=$N ready_transitions_after_all_ready=$transitions node_not_ready_events=$not_ready_events load=$(load) $(date -u +%T)"
