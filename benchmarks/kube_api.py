"""Latency of the twin's Kubernetes API over HTTP (prints numbers; no assertions).

    uv run python benchmarks/kube_api.py [--pods 500] [--n 300]

Measures p50/p99 of GET (one pod), LIST (all pods, JSON and server-side Table), PATCH (strategic
merge on a deployment), WATCH event delivery (write → event received), the wall time of
``kubectl get pods -A``, and the start time / memory of a twin running the OTel demo.

Canary section (issue 11; ``--canary-only`` runs just it): on a served otel-demo twin, the
latency of ``GET /api/v1/namespaces`` on the kube port while each worst-case Prometheus request
of ``itbench_agents/twin/prometheus/hostile.py`` runs (target p99 < 50 ms), and how long each of
those requests takes to be answered (target: its budget + 1 s).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import requests

from itbench_agents.core.endpoints import kubeconfig_yaml
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.httpserver import HttpEndpoint
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.server import make_kube_handler

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def report(name: str, xs: list[float]) -> None:
    ms = [x * 1000 for x in xs]
    print(f"{name:<34} p50 {pct(ms, 50):8.2f} ms   p99 {pct(ms, 99):8.2f} ms   (n={len(ms)})")


def timed(fn, n: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def populate(twin: Twin, pods: int) -> None:
    objs = []
    for i in range(pods):
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"bench-{i:04d}",
                    "namespace": "default",
                    "labels": {"app": f"a{i % 10}"},
                },
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "nginx:1.25",
                            "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}},
                        }
                    ]
                },
            }
        )
    objs.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx"}]},
                },
            },
        }
    )
    twin.apply(objs)
    twin.advance(30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=500)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--canary-only", action="store_true", help="only the PromQL-vs-kube canary section")
    args = ap.parse_args()
    if args.canary_only:
        canary_section()
        return

    twin = Twin(seed=1, clock=ManualClock(), nodes=20)
    populate(twin, args.pods)
    ep = HttpEndpoint(make_kube_handler(twin)).start()
    base = ep.url
    s = requests.Session()
    print(f"twin with {args.pods} pods on {base}")

    pod_url = f"{base}/api/v1/namespaces/default/pods/bench-0042"
    s.get(pod_url).raise_for_status()
    report("GET pod", timed(lambda: s.get(pod_url).raise_for_status(), args.n))
    list_url = f"{base}/api/v1/pods"
    report(
        f"LIST {args.pods} pods (JSON)",
        timed(lambda: s.get(list_url).raise_for_status(), max(20, args.n // 10)),
    )
    report(
        f"LIST {args.pods} pods (Table)",
        timed(lambda: s.get(list_url, headers={"Accept": TABLE}).raise_for_status(), max(20, args.n // 10)),
    )
    report(
        "LIST 50 pods (labelSelector)",
        timed(lambda: s.get(list_url, params={"labelSelector": "app=a3"}).raise_for_status(), args.n // 3),
    )
    counter = [0]
    dep_url = f"{base}/apis/apps/v1/namespaces/default/deployments/web"

    def patch() -> None:
        counter[0] += 1
        body = {"metadata": {"annotations": {"bench": str(counter[0])}}}
        s.patch(
            dep_url, data=json.dumps(body), headers={"Content-Type": "application/strategic-merge-patch+json"}
        ).raise_for_status()

    report("PATCH deployment (strategic)", timed(patch, args.n))

    # WATCH: delivery latency from a configmap write to the event on an open watch stream
    cm_url = f"{base}/api/v1/namespaces/default/configmaps"
    s.post(
        cm_url, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}}
    ).raise_for_status()
    rv = s.get(cm_url).json()["metadata"]["resourceVersion"]
    received: dict[str, float] = {}
    ready = threading.Event()

    def watcher() -> None:
        with requests.get(
            cm_url,
            params={"watch": "1", "resourceVersion": rv, "timeoutSeconds": "60"},
            stream=True,
            timeout=70,
        ) as r:
            ready.set()
            for line in r.iter_lines():
                if not line:
                    continue
                ev = json.loads(line)
                v = (ev["object"].get("data") or {}).get("v")
                if v is not None:
                    received[v] = time.perf_counter()
                    if v == "stop":
                        return

    th = threading.Thread(target=watcher, daemon=True)
    th.start()
    ready.wait(5)
    time.sleep(0.2)
    lat = []
    w = requests.Session()
    for i in range(min(100, args.n)):
        t0 = time.perf_counter()
        w.patch(
            f"{cm_url}/w",
            data=json.dumps({"data": {"v": str(i)}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()
        deadline = time.perf_counter() + 5
        while str(i) not in received and time.perf_counter() < deadline:
            time.sleep(0.0002)
        if str(i) in received:
            lat.append(received[str(i)] - t0)
    w.patch(
        f"{cm_url}/w",
        data=json.dumps({"data": {"v": "stop"}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    th.join(5)
    report("WATCH write→event delivered", lat)

    kubectl = shutil.which("kubectl")
    if kubectl:
        with tempfile.TemporaryDirectory() as d:
            kc = Path(d) / "kubeconfig"
            kc.write_text(kubeconfig_yaml(base))
            subprocess.run(
                [kubectl, "--kubeconfig", str(kc), "get", "pods", "-A"], capture_output=True, check=True
            )
            runs = timed(
                lambda: subprocess.run(
                    [kubectl, "--kubeconfig", str(kc), "get", "pods", "-A"], capture_output=True, check=True
                ),
                5,
            )
            print(
                f"{'kubectl get pods -A (' + str(args.pods) + ' pods)':<34} median {statistics.median(runs):.3f} s "
                f"(includes kubectl start-up and discovery)"
            )
    ep.stop()

    t0 = time.perf_counter()
    try:
        app = Twin.for_app("otel-demo", seed=1)
        start = time.perf_counter() - t0
        print(
            f"{'twin start (otel-demo, 1 h history)':<34} {start:.2f} s   pods: "
            f"{len(app.store.list(__import__('itbench_agents.twin.kube.store', fromlist=['x']).GroupResource('', 'pods')))}"
        )
    except Exception as e:  # other areas may be missing in a partial checkout
        print(f"twin start (otel-demo): unavailable ({type(e).__name__}: {e})")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{'peak RSS of this process':<34} {rss:.0f} MB")
    canary_section()


def canary_section() -> None:
    """Kube API latency while each worst-case PromQL request runs, and each request's answer time."""
    from itbench_agents.core.endpoints import kubeconfig_token
    from itbench_agents.twin.prometheus.hostile import cases
    from itbench_agents.twin.serve import running_twin

    print("\nkube API canary (GET /api/v1/namespaces) while a worst-case Prometheus request runs:")
    with running_twin(app="otel-demo", seed=1) as tw:
        ep = tw.endpoints
        assert ep is not None and ep.prometheus_url is not None
        prom = ep.prometheus_url.rstrip("/")
        token = kubeconfig_token(ep.kubeconfig)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        ns_url = ep.kube_url.rstrip("/") + "/api/v1/namespaces"
        # as in an episode (the harness waits for alerts first): families built, rules evaluated
        requests.get(prom + "/api/v1/query", params={"query": 'count({__name__=~".+"})'}, timeout=60)
        requests.get(prom + "/api/v1/alerts", timeout=60)
        all_lat: list[float] = []
        base: list[float] = []
        sess = requests.Session()
        t_end = time.perf_counter() + 3.0
        while time.perf_counter() < t_end:  # the machine's own noise, no query running
            t0 = time.perf_counter()
            sess.get(ns_url, headers=headers, timeout=30).raise_for_status()
            base.append(time.perf_counter() - t0)
            time.sleep(0.005)
        bms = [x * 1000 for x in base]
        print(
            f"  {'baseline: no Prometheus request (3 s)':<42} canary p50 {pct(bms, 50):6.2f} ms  "
            f"p99 {pct(bms, 99):6.2f} ms  max {max(bms):6.1f} ms (n={len(bms)})"
        )
        for case in cases(float(tw.now())):
            lat: list[float] = []
            stop = threading.Event()

            def canary(lat: list[float] = lat, stop: threading.Event = stop) -> None:
                sess = requests.Session()
                while not stop.is_set():
                    t0 = time.perf_counter()
                    sess.get(ns_url, headers=headers, timeout=30).raise_for_status()
                    lat.append(time.perf_counter() - t0)
                    time.sleep(0.005)

            th = threading.Thread(target=canary, daemon=True)
            th.start()
            time.sleep(0.05)
            t0 = time.perf_counter()
            if case.body is not None:
                r = requests.post(
                    prom + case.path,
                    data=case.body,
                    headers={"Content-Type": "application/x-www-form-urlencoded"},
                    timeout=120,
                )
            elif case.method == "POST":
                r = requests.post(prom + case.path, data=case.params, timeout=120)
            else:
                r = requests.get(prom + case.path, params=case.params, timeout=120)
            took = time.perf_counter() - t0
            time.sleep(0.05)
            stop.set()
            th.join()
            all_lat.extend(lat)
            ms = [x * 1000 for x in lat]
            print(
                f"  {case.name:<42} HTTP {r.status_code} in {took:6.2f} s (budget {case.budget_s:g} s + 1 s)"
                f"   canary p50 {pct(ms, 50):6.2f} ms  p99 {pct(ms, 99):6.2f} ms  max {max(ms):6.1f} ms (n={len(ms)})"
            )
        report("canary over all cases", all_lat)


if __name__ == "__main__":
    main()
