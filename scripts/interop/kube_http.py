"""A bearer-token HTTPS client from a kubeconfig (berth's and the peer's
both carry a token and a CA), for the interop scripts: the same requests
to either server, nothing server-specific."""
import base64
import datetime
import json
import tempfile
import time

import httpx
import yaml


def load_kubeconfig(path):
    """(server URL, token, CA file) of the kubeconfig's current context."""
    kc = yaml.safe_load(open(path))
    context_name = kc.get("current-context")
    context = next((c["context"] for c in kc["contexts"] if c["name"] == context_name), kc["contexts"][0]["context"])
    cluster = next(c["cluster"] for c in kc["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in kc["users"] if u["name"] == context["user"])
    ca = cluster.get("certificate-authority")
    if not ca and cluster.get("certificate-authority-data"):
        f = tempfile.NamedTemporaryFile(delete=False, suffix=".crt")
        f.write(base64.b64decode(cluster["certificate-authority-data"]))
        f.close()
        ca = f.name
    token = user.get("token") or (open(user["tokenFile"]).read().strip() if user.get("tokenFile") else None)
    if not token:
        raise SystemExit(f"{path}: the user has no token (these scripts use bearer tokens)")
    return cluster["server"], token, ca


def client(kubeconfig, timeout=30.0):
    server, token, ca = load_kubeconfig(kubeconfig)
    return httpx.Client(base_url=server, verify=ca, timeout=timeout,
                        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def check(response, *ok):
    if response.status_code not in ok:
        raise SystemExit(f"{response.request.method} {response.request.url}: {response.status_code} {response.text[:400]}")
    return response


def watch(kubeconfig, path, on_event, stop, resource_version=None):
    """Calls on_event(type, object, wall time) for each event of a watch of
    `path` until stop() is true (checked at each event and each timeout)."""
    with client(kubeconfig, timeout=None) as c:
        while not stop():
            params = {"watch": "1", "timeoutSeconds": "30", "allowWatchBookmarks": "false"}
            if resource_version:
                params["resourceVersion"] = resource_version
            with c.stream("GET", path, params=params) as s:
                for line in s.iter_lines():
                    if not line:
                        continue
                    event = json.loads(line)
                    obj = event.get("object", {})
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv and event["type"] != "ERROR":
                        resource_version = rv
                    on_event(event["type"], obj, time.time())
                    if stop():
                        return
