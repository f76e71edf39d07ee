#!/usr/bin/env python3
"""Checks that every bound pod's placement is legal, whoever bound it and on
whichever API server: the node exists, the pod tolerates each of the node's
NoSchedule and NoExecute taints (upstream's ToleratesTaint), its
nodeSelector matches, and on every node the pods' requests (cpu, memory,
pod count) fit the node's allocatable. Reads with the real kubectl
(`kubectl get -o json`), so it asks both servers the same way.

    legal.py --kubeconfig K [--namespace bench] [--expect-bound N]

Prints one JSON line; exits 1 if any placement is illegal or fewer than N
pods are bound.
"""
import argparse
import json
import subprocess
import sys
from decimal import Decimal

SUFFIX = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9, "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}


def quantity(text):
    """A resource.Quantity as a Decimal (base units: cores, bytes, pods)."""
    text = str(text).strip()
    for suffix in sorted(SUFFIX, key=len, reverse=True):
        if suffix and text.endswith(suffix):
            return Decimal(text[: -len(suffix)]) * SUFFIX[suffix]
    return Decimal(text)


def kubectl(kubeconfig, *args):
    out = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args, "-o", "json"],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["items"]


def tolerates(toleration, taint):
    """upstream's Toleration.ToleratesTaint (without the comparison operators)."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def requests_of(pod):
    """The pod's effective requests: the sum of its containers', the max
    with each init container's (no overhead, no sidecars in these runs)."""
    total = {}
    for c in pod["spec"].get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = total.get(k, Decimal(0)) + quantity(v)
    for c in pod["spec"].get("initContainers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = max(total.get(k, Decimal(0)), quantity(v))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--namespace", default=None, help="only this namespace's pods (default: all)")
    ap.add_argument("--expect-bound", type=int, default=0)
    a = ap.parse_args()
    nodes = {n["metadata"]["name"]: n for n in kubectl(a.kubeconfig, "get", "nodes")}
    # Every pod on a node counts against its allocatable, whatever its namespace.
    all_pods = kubectl(a.kubeconfig, "get", "pods", "-A")
    checked = [p for p in all_pods if not a.namespace or p["metadata"]["namespace"] == a.namespace]
    problems = []
    used = {}
    bound = 0
    for pod in all_pods:
        node_name = pod["spec"].get("nodeName")
        if not node_name:
            continue
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            continue
        u = used.setdefault(node_name, {"pods": Decimal(0)})
        u["pods"] += 1
        for k, v in requests_of(pod).items():
            u[k] = u.get(k, Decimal(0)) + v
    for pod in checked:
        name = f'{pod["metadata"]["namespace"]}/{pod["metadata"]["name"]}'
        node_name = pod["spec"].get("nodeName")
        if not node_name:
            continue
        bound += 1
        node = nodes.get(node_name)
        if node is None:
            problems.append(f"{name}: on {node_name}, which does not exist")
            continue
        for taint in node["spec"].get("taints") or []:
            if taint["effect"] not in ("NoSchedule", "NoExecute"):
                continue
            if not any(tolerates(t, taint) for t in pod["spec"].get("tolerations") or []):
                problems.append(f'{name}: on {node_name}, does not tolerate {taint["key"]}={taint.get("value", "")}:{taint["effect"]}')
        labels = node["metadata"].get("labels") or {}
        for k, v in (pod["spec"].get("nodeSelector") or {}).items():
            if labels.get(k) != v:
                problems.append(f"{name}: on {node_name}, nodeSelector {k}={v} unmatched")
    over = 0
    for node_name, u in used.items():
        node = nodes.get(node_name)
        if node is None:
            continue
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        for k, v in u.items():
            if k in allocatable and v > quantity(allocatable[k]):
                over += 1
                problems.append(f"{node_name}: {k} requested {v} > allocatable {allocatable[k]}")
            elif k not in allocatable and v > 0 and k != "pods":
                problems.append(f"{node_name}: {k} requested {v}, none allocatable")
    per_node = [u["pods"] for u in used.values()]
    report = {
        "pods_checked": len(checked), "bound": bound, "nodes": len(nodes), "nodes_used": len(used),
        "max_pods_per_node": int(max(per_node)) if per_node else 0,
        "min_pods_per_node_used": int(min(per_node)) if per_node else 0,
        "nodes_over_allocatable": over, "illegal": len(problems), "first_problems": problems[:5],
    }
    print(json.dumps(report))
    if problems or bound < a.expect_bound:
        sys.exit(1)


if __name__ == "__main__":
    main()
