"""Cost of authentication + RBAC on the twin's Kubernetes API (prints numbers; no assertions).

    uv run python benchmarks/kube_rbac.py [--n 500]

GET of one pod with: no token (anonymous mode "admin"), the static admin token (system:masters fast
path), a ServiceAccount token allowed by a RoleBinding (RBAC evaluated, decisions memoised), the same
right after every RBAC change (index rebuilt), and a forbidden request (403); over HTTP and HTTPS.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import requests

from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.httpserver import HttpEndpoint
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.auth import ADMIN_TOKEN, auth_state
from itbench_agents.twin.kube.auth.tls import TwinTLS, enable_tls
from itbench_agents.twin.kube.server import make_kube_handler

NS = "bench"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def report(name: str, xs: list[float]) -> None:
    ms = [x * 1000 for x in xs]
    print(f"{name:<44} p50 {statistics.median(ms):7.2f} ms   p99 {pct(ms, 99):7.2f} ms   (n={len(ms)})")


def setup(base: str, verify: str | bool) -> tuple[requests.Session, str, str]:
    s = requests.Session()
    s.verify = verify
    s.trust_env = False  # a REQUESTS_CA_BUNDLE in the environment would override verify
    h = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    s.post(f"{base}/api/v1/namespaces", json={"metadata": {"name": NS}}, headers=h).raise_for_status()
    s.post(f"{base}/api/v1/namespaces/{NS}/pods", headers=h, json={
        "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }).raise_for_status()  # fmt: skip
    s.post(f"{base}/api/v1/namespaces/{NS}/serviceaccounts", json={"metadata": {"name": "agent"}}, headers=h)
    for i in range(20):  # some unrelated bindings, so the index has something to skip
        s.post(f"{base}/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles", headers=h, json={
            "metadata": {"name": f"r{i}"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
        })  # fmt: skip
        s.post(f"{base}/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings", headers=h, json={
            "metadata": {"name": f"b{i}"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"r{i}"},
            "subjects": [{"kind": "User", "name": f"user{i}"}],
        })  # fmt: skip
    s.post(f"{base}/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings", headers=h, json={
        "metadata": {"name": "agent"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "agent", "namespace": NS}],
    }).raise_for_status()  # fmt: skip
    r = s.post(f"{base}/api/v1/namespaces/{NS}/serviceaccounts/agent/token", json={}, headers=h)
    r.raise_for_status()
    return s, h["Authorization"], f"Bearer {r.json()['status']['token']}"


def run(label: str, base: str, verify: str | bool, n: int, twin: Twin) -> None:
    s, admin, agent = setup(base, verify)
    url = f"{base}/api/v1/namespaces/{NS}/pods/p"

    def timed(headers: dict[str, str], expect: int, between: object = None) -> list[float]:
        out = []
        for _ in range(n):
            if callable(between):
                between()
            t0 = time.perf_counter()
            r = s.get(url if expect != 403 else f"{base}/api/v1/namespaces/{NS}/secrets", headers=headers)
            out.append(time.perf_counter() - t0)
            assert r.status_code == expect, (r.status_code, r.text)
        return out

    def rbac_change() -> None:
        with twin.lock:
            auth_state(twin).rbac.generation += 1  # what any RBAC write does

    report(f"{label} GET pod, no token (anonymous=admin)", timed({}, 200))
    report(f"{label} GET pod, admin token", timed({"Authorization": admin}, 200))
    report(f"{label} GET pod, ServiceAccount token (RBAC)", timed({"Authorization": agent}, 200))
    report(
        f"{label} GET pod, SA token, index rebuilt each", timed({"Authorization": agent}, 200, rbac_change)
    )
    report(f"{label} LIST secrets, SA token → 403", timed({"Authorization": agent}, 403))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    args = ap.parse_args()
    for tls in (False, True):
        twin = Twin(seed=1, clock=ManualClock())
        ep = HttpEndpoint(make_kube_handler(twin))
        verify: str | bool = False
        base = ep.url
        with tempfile.TemporaryDirectory() as d:
            if tls:
                t = TwinTLS()
                base = enable_tls(ep, t)
                verify = t.write_ca(Path(d) / "ca.crt")
            ep.start()
            try:
                run("HTTPS" if tls else "HTTP ", base, verify, args.n, twin)
            finally:
                ep.stop()


if __name__ == "__main__":
    main()
