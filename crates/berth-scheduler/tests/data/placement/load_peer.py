#!/usr/bin/env python3
"""Records the real kube-scheduler's placement of cluster.json, for
tests/placement.rs. It starts nothing itself.

One recording (the peer of /work/shared/peer):
  run-cluster.sh start   (with NO_SCHED=1 NO_KCM=1)
  load_peer.py load    URL TOKEN CA          # namespace, nodes, ReplicaSets, pods
  run-cluster.sh start-scheduler -v=10       # the default profile
  load_peer.py collect URL TOKEN CA OUT      # waits for every pod bound; counts
  load_peer.py cycles  LOG SEQUENCE CYCLES   # from the scheduler's log
  run-cluster.sh stop

  load_peer.py runs    OUT RUN.json...       # many recordings, summarised

`collect` writes per-zone counts per workload and per-node counts
(upstream_placement.json). `cycles` reads kube-scheduler's -v=10 log: the
pods in the order it scheduled them with the node each went to
(upstream_sequence.txt: the informer hands the backlog over in an order of
its own, different in every run, and the order decides much of the
placement), and for every SAMPLE-th cycle the nodes it found feasible with
each plugin's weighted score and the nodes its filters rejected, by plugin
(upstream_cycles.jsonl). `runs` summarises recordings made with different
orders and tie-breaks (upstream_runs.json): how far upstream's placements
vary by themselves.
"""
import itertools, json, os, re, ssl, sys, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = json.load(open(os.path.join(HERE, "cluster.json")))
NS = SPEC["namespace"]

def pod_order(spec):
    """Pod i's workload: the workloads interleaved in proportion, the same
    order berth's test uses (pods are scheduled in name order when the
    scheduler starts on an existing backlog)."""
    counts = {w["name"]: 0 for w in spec["workloads"]}
    total = sum(w["replicas"] for w in spec["workloads"])
    order = []
    for i in range(total):
        # the workload furthest behind its share of i+1 pods (integers:
        # replicas*(i+1) - created*total), the first one on a tie
        best = max(spec["workloads"], key=lambda w: (w["replicas"] * (i + 1) - counts[w["name"]] * total, -spec["workloads"].index(w)))
        counts[best["name"]] += 1
        order.append((best, counts[best["name"]] - 1))
    return order

class Api:
    def __init__(self, url, token, ca):
        self.url, self.token = url, token
        self.ctx = ssl.create_default_context(cafile=ca)
    def call(self, method, path, body=None, ctype="application/json"):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Content-Type", ctype)
        with urllib.request.urlopen(req, context=self.ctx) as r:
            return json.loads(r.read() or b"{}")

def node_name(i): return f"node-{i:03d}"
def node_number(name): return int(name.removeprefix("node-"))

def load(api):
    n = SPEC["nodes"]
    api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    # The pods' service account, as the controller manager (not running)
    # would make it; admission refuses pods without it.
    api.call("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    for i in range(n["count"]):
        name = node_name(i)
        api.call("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": n["zones"][i % len(n["zones"])]}}})
        taints = [n["taint"]] if i < n["tainted"] else []
        # Replace admission's not-ready taint, as the node lifecycle controller would.
        api.call("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": taints or None}}, "application/merge-patch+json")
        api.call("PATCH", f"/api/v1/nodes/{name}/status", {"status": {"capacity": n["allocatable"], "allocatable": n["allocatable"],
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}]}}, "application/merge-patch+json")
    uids = {}
    for w in SPEC["workloads"]:
        rs = api.call("POST", f"/apis/apps/v1/namespaces/{NS}/replicasets", {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": w["name"]}, "spec": {"replicas": 0, "selector": {"matchLabels": {"app": w["name"]}},
            "template": {"metadata": {"labels": {"app": w["name"]}}, "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}})
        uids[w["name"]] = rs["metadata"]["uid"]
    for i, (w, _) in enumerate(pod_order(SPEC)):
        spec = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                "resources": {"requests": {"cpu": w["cpu"], "memory": w["memory"]}}}]}
        if w.get("tolerate"):
            t = SPEC["nodes"]["taint"]
            spec["tolerations"] = [{"key": t["key"], "operator": "Equal", "value": t["value"], "effect": t["effect"]}]
        if w.get("spread"):
            spec["topologySpreadConstraints"] = [dict(c, labelSelector={"matchLabels": {"app": w["name"]}}) for c in w["spread"]]
        if w.get("antiAffinityTopologyKey"):
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": w["name"]}}, "topologyKey": w["antiAffinityTopologyKey"]}]}}
        api.call("POST", f"/api/v1/namespaces/{NS}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"pod-{i:04d}", "labels": {"app": w["name"]},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": w["name"], "uid": uids[w["name"]], "controller": True}]},
            "spec": spec})

def collect(api, out):
    total = sum(w["replicas"] for w in SPEC["workloads"])
    while True:
        pods = api.call("GET", f"/api/v1/namespaces/{NS}/pods")["items"]
        bound = [p for p in pods if p["spec"].get("nodeName")]
        print(f"{len(bound)}/{total} bound", file=sys.stderr)
        if len(bound) == total:
            break
        time.sleep(2)
    zones = {node_name(i): SPEC["nodes"]["zones"][i % len(SPEC["nodes"]["zones"])] for i in range(SPEC["nodes"]["count"])}
    per_zone = {w["name"]: {z: 0 for z in SPEC["nodes"]["zones"]} for w in SPEC["workloads"]}
    per_node = {node_name(i): 0 for i in range(SPEC["nodes"]["count"])}
    per_node_workload = {w["name"]: {} for w in SPEC["workloads"]}
    for p in bound:
        app, node = p["metadata"]["labels"]["app"], p["spec"]["nodeName"]
        per_zone[app][zones[node]] += 1
        per_node[node] += 1
        per_node_workload[app][node] = per_node_workload[app].get(node, 0) + 1
    json.dump({"recorded_from": "kube-scheduler v1.36.2 (openshift/kubernetes as vendored by openshift/microshift), default profile, against kube-apiserver v1.36.2, no controller manager",
               "per_zone": per_zone, "per_node": per_node, "per_node_per_workload": per_node_workload},
              open(out, "w"), indent=1, sort_keys=True)

SAMPLE = 40

def cycles(log, sequence_out, cycles_out):
    """The scheduling cycles of a -v=10 log (klog text lines)."""
    pod_re = r'pod="%s/([^"]+)"' % NS
    attempt = re.compile(r'"Attempting to schedule pod" ' + pod_re)
    scored = re.compile(r'"Plugin scored node for pod" ' + pod_re + r' plugin="([^"]+)" node="([^"]+)" score=(-?\d+)')
    rejected = re.compile(r'logger="FilterWithNominatedPods\.Filter\.([A-Za-z]+)" ' + pod_re + r' node="([^"]+)"')
    bound = re.compile(r'"Successfully bound pod to node" ' + pod_re + r' node="([^"]+)"')
    order, cycle = [], {}
    for line in open(log):
        if m := scored.search(line):
            cycle.setdefault(m[1], {}).setdefault("scores", {}).setdefault(m[3], {})[m[2]] = int(m[4])
        elif m := rejected.search(line):
            cycle.setdefault(m[2], {}).setdefault("rejected", {}).setdefault(m[1], []).append(m[3])
        elif m := bound.search(line):
            cycle.setdefault(m[1], {})["node"] = m[2]
        elif m := attempt.search(line):
            order.append(m[1])
    assert len(order) == len(set(order)), "a pod was scheduled twice"
    with open(sequence_out, "w") as f:
        for pod in order:
            f.write(f"{pod} {cycle[pod]['node']}\n")
    with open(cycles_out, "w") as f:
        for i, pod in enumerate(order):
            if i % SAMPLE:
                continue
            c = cycle[pod]
            nodes = sorted(c["scores"])
            plugins = sorted({p for n in nodes for p in c["scores"][n]})
            # Nodes by number (node-042 is 42); a plugin that gave every
            # node the same score, by that one score.
            scores = {}
            for p in plugins:
                s = [c["scores"][n][p] for n in nodes]
                scores[p] = s[0] if len(set(s)) == 1 else s
            row = {"cycle": i, "pod": pod, "node": c["node"], "feasible": [node_number(n) for n in nodes],
                   "scores": scores,
                   "rejected": {p: sorted(map(node_number, ns)) for p, ns in sorted(c.get("rejected", {}).items())}}
            f.write(json.dumps(row, separators=(",", ":")) + "\n")

def runs(out, files):
    """Per recording: each workload's zone counts (sorted), nodes used,
    busiest node, pods on tainted nodes; the per-node counts (sorted)."""
    tainted = {node_name(i) for i in range(SPEC["nodes"]["tainted"])}
    summary = []
    for name in files:
        r = json.load(open(name))
        per_workload = {}
        for w, nodes in sorted(r["per_node_per_workload"].items()):
            per_workload[w] = {"zones": sorted(r["per_zone"][w].values()),
                               "nodes_used": sum(1 for n in nodes.values() if n > 0),
                               "busiest_node": max(nodes.values()),
                               "on_tainted_nodes": sum(n for node, n in nodes.items() if node in tainted)}
        summary.append({"per_workload": per_workload, "per_node_sorted": sorted(r["per_node"].values())})
    with open(out, "w") as f:
        f.write('{"recorded_from": "kube-scheduler v1.36.2, default profile, one fresh cluster per run (load_peer.py load/collect)",\n "runs": [\n')
        f.write(",\n".join("  " + json.dumps(s, separators=(",", ":"), sort_keys=True) for s in summary))
        f.write("\n]}\n")

if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "cycles":
        cycles(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "runs":
        runs(sys.argv[2], sys.argv[3:])
    else:
        api = Api(sys.argv[2], sys.argv[3], sys.argv[4])
        if cmd == "load":
            load(api)
        else:
            collect(api, sys.argv[5])
