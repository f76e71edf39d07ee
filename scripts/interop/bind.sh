#!/usr/bin/env bash
# bind.sh COMBO : 1,000 Ready nodes (bench.py setup), 10,000 pending pods
# (100m CPU, 500Mi each, created with wrk, not timed), then the scheduler
# starts and the time until every pod is bound is measured from its start
# (bench.py wait-bound: one list, then a watch), then legal.py checks every
# placement. COMBO, scheduler@apiserver:
#   real@peer    kube-scheduler v1.36.2 against kube-apiserver v1.36.2
#   real@berth   kube-scheduler v1.36.2 against berth server --disable-scheduler
#   berth@peer   berth scheduler --kubeconfig (the peer's system:kube-scheduler token) against kube-apiserver
#   berth@berth  berth scheduler --kubeconfig against berth server --disable-scheduler
#   inproc       berth server's own scheduler (the server restarted with it on)
# Env: QPS (kube-scheduler --kube-api-qps and --kube-api-burst, default 5000; "default": upstream's 50/100),
# NODES (1000), PODS (10000). Nodes stay Ready: the node lifecycle controller runs with a 3600 s grace.
. "$(dirname "$0")/common.sh"
combo=$1; QPS=${QPS:-5000}; NODES=${NODES:-1000}; PODS=${PODS:-10000}
echo "=== bind $combo nodes=$NODES pods=$PODS qps=$QPS load=$(load) $(date -u +%T)"
qps_flags=(); [ "$QPS" = default ] || qps_flags=(--kube-api-qps=$QPS --kube-api-burst=$QPS)
case $combo in
  *@peer) peer_start --node-monitor-grace-period=3600s --kube-api-qps=1000 --kube-api-burst=1000
          KC=$(peer_admin); URL=https://127.0.0.1:$PORT; TOKEN=$(cat "$RUN/admin.token") ;;
  *@berth) berth_start --disable-scheduler --node-monitor-grace-period 3600s
           KC=$(berth_admin); URL=https://127.0.0.1:$BERTH_PORT; TOKEN=$(cat "$BERTH_RUN/d/admin-token") ;;
  inproc) berth_start --disable-scheduler --node-monitor-grace-period 3600s
          KC=$(berth_admin); URL=https://127.0.0.1:$BERTH_PORT; TOKEN=$(cat "$BERTH_RUN/d/admin-token") ;;
  *) echo "unknown combo $combo"; exit 2 ;;
esac
python3 "$HARNESS/bench.py" setup --kubeconfig "$KC" --nodes "$NODES" --pods 0
for _ in $(seq 1 100); do  # kube-apiserver admits pods once the namespace's default ServiceAccount exists
  c=$(curl -sk -H "Authorization: Bearer $TOKEN" "$URL/api/v1/namespaces/bench/serviceaccounts/default" -o /dev/null -w '%{http_code}')
  [ "$c" = 200 ] && break; sleep 0.2; done
t0=$(ts)
TOKEN=$TOKEN NS=bench N=$PODS PREFIX=p TOLERATE_HALF=0 wrk -t1 -c64 -d600s --timeout 120s -s "$HARNESS/create.lua" "$URL" | grep DONE
echo "pods_created_s=$(since "$t0")"
sleep 2
SP=""
t0=$(ts)
case $combo in
  real@peer) $RC start-scheduler "${qps_flags[@]}" >/dev/null; SP=$(cat "$RUN/pids/kube-scheduler.pid") ;;
  real@berth) "$BIN_PEER/kube-scheduler" --kubeconfig="$KC" --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" \
                --bind-address=127.0.0.1 --secure-port=$SCHED_PORT --leader-elect=false "${qps_flags[@]}" > "$BERTH_RUN/kube-scheduler.log" 2>&1 &
              SP=$! ;;
  berth@peer) "$BERTH" scheduler --kubeconfig "$RUN/scheduler.kubeconfig" --leader-elect=false > "$RUN/logs/berth-scheduler.log" 2>&1 & SP=$! ;;
  berth@berth) "$BERTH" scheduler --kubeconfig "$KC" --leader-elect=false > "$BERTH_RUN/berth-scheduler.log" 2>&1 & SP=$! ;;
  inproc) berth_stop; t0=$(ts); berth_restart --node-monitor-grace-period 3600s ;;
esac
# The watch wait-bound follows can end early (kube-apiserver closed it in a
# release berth@peer run); it is then started again with the same t0 (one
# list, then a new watch), so the time stays the scheduler's.
for _ in 1 2 3 4 5; do
  out=$(python3 "$HARNESS/bench.py" wait-bound --kubeconfig "$KC" --t0 "$t0"); echo "$out"
  case $out in *'"all_bound_s": null'*) echo "the watch ended before every pod was bound: again" ;; *) break ;; esac
done
case $combo in
  *@peer) echo "after: $($RC status | tr '\n' ' ')" ;;
  *) echo "after: berth server rss=$(rss_mib "$(berth_pid)")MiB cpu=$(cpu_s "$(berth_pid)")s" ;;
esac
[ -n "$SP" ] && echo "scheduler: rss=$(rss_mib "$SP")MiB cpu=$(cpu_s "$SP")s"
python3 "$HERE/legal.py" --kubeconfig "$KC" --namespace bench --expect-bound "$PODS"; legal=$?
[ -n "$SP" ] && stop_pid "$SP"
case $combo in *@peer) peer_stop ;; *) berth_stop ;; esac
echo "=== end bind $combo legal_exit=$legal load=$(load) $(date -u +%T)"
