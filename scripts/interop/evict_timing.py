#!/usr/bin/env python3
"""Times the taint eviction path on any API server, whoever runs the node
lifecycle and taint eviction controllers: the script plays two kubelets
(fake Nodes it keeps Ready by writing their Ready condition's
lastHeartbeatTime every --heartbeat seconds), binds pods to one of them,
stops that node's heartbeats, and watches when the node is tainted
`node.kubernetes.io/unreachable:NoExecute` and when each pod is deleted.

    evict_timing.py --kubeconfig K --grace 20 [--toleration 10]

Pods on the silent node: `tol` tolerates unreachable for --toleration
seconds (due at the taint's timeAdded + that), `default` has no toleration
of its own (kube-apiserver's DefaultTolerationSeconds admission gives it
300 s), `forever` tolerates it without a limit; `alive` sits on the node
that keeps beating. All have terminationGracePeriodSeconds 0, so the
eviction's delete is the pod's end (no kubelet is there to finish it).
Prints one JSON line; exits 1 when the expected pod was not evicted or
another was.
"""
import argparse
import json
import sys
import threading
import time

from kube_http import check, client, now_rfc3339, parse_rfc3339, watch

NS = "evict-timing"
ALIVE, SILENT = "evict-alive", "evict-silent"


def node(name):
    t = now_rfc3339()
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "evict_timing.py", "lastHeartbeatTime": t,
                                       "lastTransitionTime": t}]}}


def pod(name, node_name, tolerations):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node_name, "terminationGracePeriodSeconds": 0,
                     "automountServiceAccountToken": False, "tolerations": tolerations,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}


def unreachable(seconds=None):
    t = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--grace", type=float, required=True, help="the controller's --node-monitor-grace-period, seconds")
    ap.add_argument("--toleration", type=int, default=10)
    ap.add_argument("--heartbeat", type=float, default=2.0)
    ap.add_argument("--settle", type=float, default=5.0, help="seconds to watch the other pods stay after the eviction")
    ap.add_argument("--burst", type=int, default=0, help="more pods on the silent node tolerating unreachable as `tol` does: the eviction throughput")
    a = ap.parse_args()
    c = client(a.kubeconfig)
    r = c.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    check(r, 201, 409)
    for n in (ALIVE, SILENT):
        c.delete(f"/api/v1/nodes/{n}")
    for _ in range(100):
        if all(c.get(f"/api/v1/nodes/{n}").status_code == 404 for n in (ALIVE, SILENT)):
            break
        time.sleep(0.1)
    for n in (ALIVE, SILENT):
        check(c.post("/api/v1/nodes", json=node(n)), 201)

    beating = {ALIVE, SILENT}
    last_beat = {}
    done = threading.Event()
    lock = threading.Lock()

    def heartbeats():
        hc = client(a.kubeconfig)
        while not done.is_set():
            with lock:
                names = sorted(beating)
            for n in names:
                t = now_rfc3339()
                body = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                                   "message": "evict_timing.py", "lastHeartbeatTime": t}]}}
                r = hc.patch(f"/api/v1/nodes/{n}/status", content=json.dumps(body),
                             headers={"Content-Type": "application/strategic-merge-patch+json"})
                if r.status_code == 200:
                    with lock:
                        if n in beating:
                            last_beat[n] = time.time()
                else:
                    print(f"heartbeat {n}: {r.status_code} {r.text[:200]}", file=sys.stderr)
            done.wait(a.heartbeat)

    threading.Thread(target=heartbeats, daemon=True).start()
    # The node lifecycle controller takes off the not-ready taint admission
    # puts on a new Node once it has seen it Ready.
    t0 = time.time()
    while time.time() - t0 < 120:
        nodes = [c.get(f"/api/v1/nodes/{n}").json() for n in (ALIVE, SILENT)]
        if all(not any(t["key"].startswith("node.kubernetes.io/") for t in (n["spec"].get("taints") or [])) for n in nodes):
            break
        time.sleep(0.5)
    else:
        raise SystemExit("the nodes still carry node.kubernetes.io/ taints after 120 s: is a node lifecycle controller running?")
    ready_s = round(time.time() - t0, 2)

    pods = {"tol": pod("tol", SILENT, [unreachable(a.toleration)]),
            "default": pod("default", SILENT, []),
            "forever": pod("forever", SILENT, [unreachable()]),
            "alive": pod("alive", ALIVE, [])}
    burst = [f"burst-{i}" for i in range(a.burst)]
    for name in burst:
        pods[name] = pod(name, SILENT, [unreachable(a.toleration)])
    for name in pods:
        c.delete(f"/api/v1/namespaces/{NS}/pods/{name}", params={"gracePeriodSeconds": "0"})
    for name, p in pods.items():
        for _ in range(100):
            r = c.post(f"/api/v1/namespaces/{NS}/pods", json=p)
            if r.status_code != 409:
                break
            time.sleep(0.1)
        check(r, 201)
    created = {name: c.get(f"/api/v1/namespaces/{NS}/pods/{name}").json() for name in ("tol", "default", "forever", "alive")}
    default_tolerations = [t for t in created["default"]["spec"].get("tolerations") or []
                           if t.get("key") == "node.kubernetes.io/unreachable"]
    rv_pods = c.get(f"/api/v1/namespaces/{NS}/pods").json()["metadata"]["resourceVersion"]
    rv_nodes = c.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]

    seen = {"taint": None, "time_added": None, "unknown": None, "ended": {}, "disruption_target": {}}

    def on_node(kind, obj, t):
        if obj.get("metadata", {}).get("name") != SILENT:
            return
        for taint in obj.get("spec", {}).get("taints") or []:
            if taint["key"] == "node.kubernetes.io/unreachable" and taint["effect"] == "NoExecute" and seen["taint"] is None:
                seen["taint"] = t
                seen["time_added"] = parse_rfc3339(taint["timeAdded"]) if taint.get("timeAdded") else None
        for cond in obj.get("status", {}).get("conditions") or []:
            if cond["type"] == "Ready" and cond["status"] == "Unknown" and seen["unknown"] is None:
                seen["unknown"] = t

    def on_pod(kind, obj, t):
        name = obj.get("metadata", {}).get("name")
        if name not in pods:
            return
        for cond in obj.get("status", {}).get("conditions") or []:
            if cond["type"] == "DisruptionTarget" and name not in seen["disruption_target"]:
                seen["disruption_target"][name] = cond.get("reason")
        if (kind == "DELETED" or obj["metadata"].get("deletionTimestamp")) and name not in seen["ended"]:
            seen["ended"][name] = t

    threading.Thread(target=watch, args=(a.kubeconfig, "/api/v1/nodes", on_node, done.is_set, rv_nodes), daemon=True).start()
    threading.Thread(target=watch, args=(a.kubeconfig, f"/api/v1/namespaces/{NS}/pods", on_pod, done.is_set, rv_pods), daemon=True).start()
    time.sleep(1)
    with lock:
        beating.discard(SILENT)
        silent_since = last_beat[SILENT]
    deadline = time.time() + a.grace + a.toleration + 90
    while (("tol" not in seen["ended"]) or any(b not in seen["ended"] for b in burst)) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(a.settle)
    done.set()
    ta = seen["time_added"]
    tol_end = seen["ended"].get("tol")
    report = {
        "nodes_untainted_after_s": ready_s,
        "default_pod_unreachable_toleration": default_tolerations,
        "grace_s": a.grace, "toleration_s": a.toleration,
        "ready_unknown_after_last_heartbeat_s": round(seen["unknown"] - silent_since, 2) if seen["unknown"] else None,
        "taint_seen_after_last_heartbeat_s": round(seen["taint"] - silent_since, 2) if seen["taint"] else None,
        "taint_time_added_after_last_heartbeat_s": round(ta - silent_since, 2) if ta else None,
        "tol_pod_ended_after_time_added_s": round(tol_end - ta, 2) if tol_end and ta else None,
        "tol_pod_ended_after_taint_seen_s": round(tol_end - seen["taint"], 2) if tol_end and seen["taint"] else None,
        "tol_pod_ended_after_last_heartbeat_s": round(tol_end - silent_since, 2) if tol_end else None,
        "disruption_target": {k: v for k, v in seen["disruption_target"].items() if not k.startswith("burst-")},
        "ended": sorted(n for n in seen["ended"] if not n.startswith("burst-")),
    }
    if burst:
        ends = sorted(seen["ended"][b] for b in burst if b in seen["ended"])
        due = ta + a.toleration if ta else None
        report["burst"] = {
            "pods": len(burst), "ended": len(ends),
            "first_ended_after_due_s": round(ends[0] - due, 2) if ends and due else None,
            "last_ended_after_due_s": round(ends[-1] - due, 2) if ends and due else None,
            "evictions_per_s_first_to_last": round((len(ends) - 1) / (ends[-1] - ends[0]), 1) if len(ends) > 1 and ends[-1] > ends[0] else None,
        }
    print(json.dumps(report))
    for name in pods:
        c.delete(f"/api/v1/namespaces/{NS}/pods/{name}", params={"gracePeriodSeconds": "0"})
    for n in (ALIVE, SILENT):
        c.delete(f"/api/v1/nodes/{n}")
    ok = report["ended"] == ["tol"] and (not burst or report["burst"]["ended"] == len(burst))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
