#!/usr/bin/env bash
# evict.sh COMBO : evict_timing.py against an API server whose node
# lifecycle and taint eviction controllers are COMBO's (controllers@apiserver):
#   real@peer    kube-controller-manager v1.36.2 against kube-apiserver v1.36.2
#   real@berth   kube-controller-manager (--controllers=nodelifecycle,taint-eviction-controller)
#                against berth server --controllers=-node-lifecycle-controller,-taint-eviction-controller
#   berth@peer   berth controllers --kubeconfig (the peer's system:kube-controller-manager token)
#                against kube-apiserver, whose controller manager runs without those two
#   berth@berth  berth controllers --kubeconfig against berth server --controllers=
#   inproc       berth server's own controllers
# All with --node-monitor-grace-period=$GRACE (20 s) and --node-monitor-period=5s; the
# pod `tol` tolerates unreachable for $TOL (10) seconds; BURST (0) more pods
# tolerating it as long are evicted with it (the controllers' throughput).
. "$(dirname "$0")/common.sh"
combo=$1; GRACE=${GRACE:-20}; TOL=${TOL:-10}; BURST=${BURST:-0}
timing=(--node-monitor-grace-period=${GRACE}s --node-monitor-period=5s)
echo "=== evict $combo grace=${GRACE}s toleration=${TOL}s burst=$BURST load=$(load) $(date -u +%T)"
CP=""
case $combo in
  real@peer) peer_start "${timing[@]}"; KC=$(peer_admin) ;;
  berth@peer) peer_start --controllers='*,-nodelifecycle,-taint-eviction-controller'; KC=$(peer_admin)
              "$BERTH" controllers --kubeconfig "$RUN/kcm.kubeconfig" \
                --controllers=node-lifecycle-controller,taint-eviction-controller "${timing[@]}" \
                > "$RUN/logs/berth-controllers.log" 2>&1 & CP=$! ;;
  real@berth) berth_start --disable-scheduler --controllers=-node-lifecycle-controller,-taint-eviction-controller; KC=$(berth_admin)
              "$BIN_PEER/kube-controller-manager" --kubeconfig="$KC" --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" \
                --bind-address=127.0.0.1 --secure-port=$KCM_PORT --leader-elect=false --use-service-account-credentials=false \
                --controllers=nodelifecycle,taint-eviction-controller "${timing[@]}" > "$BERTH_RUN/kube-controller-manager.log" 2>&1 & CP=$! ;;
  berth@berth) berth_start --disable-scheduler --controllers=; KC=$(berth_admin)
               "$BERTH" controllers --kubeconfig "$KC" --controllers=node-lifecycle-controller,taint-eviction-controller \
                 "${timing[@]}" > "$BERTH_RUN/berth-controllers.log" 2>&1 & CP=$! ;;
  inproc) berth_start --disable-scheduler "${timing[@]}"; KC=$(berth_admin) ;;
  *) echo "unknown combo $combo"; exit 2 ;;
esac
python3 "$HERE/evict_timing.py" --kubeconfig "$KC" --grace "$GRACE" --toleration "$TOL" --burst "$BURST"; rc=$?
[ -n "$CP" ] && stop_pid "$CP"
case $combo in *@peer) peer_stop ;; *) berth_stop ;; esac
echo "=== end evict $combo exit=$rc load=$(load) $(date -u +%T)"
