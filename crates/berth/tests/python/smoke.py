"""Smoke test of berth's API with the official Kubernetes Python client.

Usage: python3 smoke.py KUBECONFIG

Creates a node and two pods, lists them with a label selector and with
field selectors, patches the node's taints (strategic merge and JSON
patch; the NoExecute taint's Warning header, on a dry run and on the
write), watches pods and sees the initial state and a later change, then
deletes everything. Prints `OK` as its last line; any failure raises and
exits non-zero. Run by crates/berth/tests/python_e2e.rs.
"""

import sys

try:
    from kubernetes import client, config, watch
    from kubernetes.client.rest import ApiException
except ImportError as e:
    sys.exit(f"the kubernetes Python client is missing ({e}): pip install kubernetes")

NS = "default"
WATCH_SECONDS = 20


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def names(items):
    return sorted(item.metadata.name for item in items)


def taints_of(v1, node):
    spec = v1.read_node(node).spec
    return [(t.key, t.value, t.effect) for t in (spec.taints or [])]


def expect_status(code, call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except ApiException as e:
        check(e.status == code, f"{call.__name__}: status {e.status}, wanted {code}: {e.body}")
        return
    raise AssertionError(f"{call.__name__} succeeded, wanted status {code}")


def main(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()

    # A node, an unscheduled pod and a pod bound to the node.
    v1.create_node({"metadata": {"name": "py-node", "labels": {"pool": "py"}}})
    pod_spec = {"containers": [{"name": "c", "image": "busybox"}]}
    v1.create_namespaced_pod(
        NS, {"metadata": {"name": "py-pod", "labels": {"app": "py"}}, "spec": pod_spec}
    )
    v1.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": "py-bound", "labels": {"app": "other"}},
            "spec": dict(pod_spec, nodeName="py-node"),
        },
    )

    # Selectors.
    selected = [
        ("label app=py", {"label_selector": "app=py"}, ["py-pod"]),
        ("label app in (py,other)", {"label_selector": "app in (py,other)"}, ["py-bound", "py-pod"]),
        ("unscheduled", {"field_selector": "spec.nodeName="}, ["py-pod"]),
        ("on py-node", {"field_selector": "spec.nodeName=py-node"}, ["py-bound"]),
    ]
    for what, selector, want in selected:
        got = names(v1.list_namespaced_pod(NS, **selector).items)
        check(got == want, f"{what}: {got}, wanted {want}")
    got = names(v1.list_node(label_selector="pool=py").items)
    check(got == ["py-node"], f"nodes with pool=py: {got}")

    # Taints: a dict body is a strategic merge patch, a list a JSON patch.
    v1.patch_node(
        "py-node",
        {"spec": {"taints": [{"key": "dedicated", "value": "py", "effect": "NoSchedule"}]}},
    )
    got = taints_of(v1, "py-node")
    check(got == [("dedicated", "py", "NoSchedule")], f"taints after merge patch: {got}")
    # What a NoExecute taint will do comes back as a Warning header, on a
    # dry run (which changes nothing) as on the write.
    evict = [{"op": "add", "path": "/spec/taints/-", "value": {"key": "evict", "effect": "NoExecute"}}]
    want = "1 pod does not tolerate evict:NoExecute and is evicted now: default/py-bound"
    _, status, headers = v1.patch_node_with_http_info("py-node", evict, dry_run="All")
    warning = headers.get("Warning", "")
    check(status == 200 and want in warning, f"dry-run warning: {status} {warning!r}")
    got = taints_of(v1, "py-node")
    check(got == [("dedicated", "py", "NoSchedule")], f"a dry run changes nothing: {got}")
    _, _, headers = v1.patch_node_with_http_info("py-node", evict)
    check(want in headers.get("Warning", ""), f"warning: {headers.get('Warning')!r}")
    taints = v1.read_node("py-node").spec.taints
    got = [(t.key, t.value, t.effect) for t in taints]
    check(
        got == [("dedicated", "py", "NoSchedule"), ("evict", None, "NoExecute")],
        f"taints after JSON patch: {got}",
    )
    check(taints[1].time_added is not None, "the NoExecute taint has timeAdded")

    # Watch: the initial state as ADDED, then the label change as MODIFIED.
    w = watch.Watch()
    seen = []
    for event in w.stream(
        v1.list_namespaced_pod, NS, label_selector="app=py", timeout_seconds=WATCH_SECONDS
    ):
        pod = event["object"]
        seen.append((event["type"], pod.metadata.name))
        if event["type"] == "ADDED" and pod.metadata.name == "py-pod":
            v1.patch_namespaced_pod("py-pod", NS, {"metadata": {"labels": {"seen": "yes"}}})
        elif event["type"] == "MODIFIED" and (pod.metadata.labels or {}).get("seen") == "yes":
            w.stop()
    check(
        seen[:1] == [("ADDED", "py-pod")] and ("MODIFIED", "py-pod") in seen,
        f"watch events: {seen} (within {WATCH_SECONDS} s)",
    )

    # Delete; then they are gone.
    for pod in ["py-pod", "py-bound"]:
        v1.delete_namespaced_pod(pod, NS, grace_period_seconds=0)
        expect_status(404, v1.read_namespaced_pod, pod, NS)
    v1.delete_node("py-node")
    expect_status(404, v1.read_node, "py-node")

    print("OK")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: smoke.py KUBECONFIG")
    main(sys.argv[1])
