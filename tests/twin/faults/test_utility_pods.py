"""Ad-hoc pods of utility images run their command (issue 11): ``kubectl run`` / ``kubectl debug``
with busybox, alpine, ubuntu... exit with the script's code, sleep on the virtual clock, print what
they echo, and an unknown command is ``sh: foo: not found`` — not a fake server "listening on port
8080". Driven with the real /usr/bin/kubectl against a served twin."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from faultkit import Cluster, make_twin
from support.kubectl_cluster import KUBECTL, run_kubectl

from itbench_agents.twin.faults.containers import ImageCatalogue, common_images
from itbench_agents.twin.faults.shell import container_program

Kubectl = Callable[..., str]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Kubectl]]:
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl not installed")
    tw = make_twin("chain", settle=60.0)
    ep = tw.serve(tmp_path_factory.mktemp("adhoc"))

    def run(*args: str, stdin: str | None = None, ok: bool = True) -> str:
        r = run_kubectl(ep.kubeconfig, *args, input=stdin, check=ok)
        return r.stdout + (r.stderr if not ok else "")

    yield Cluster(tw), run
    tw.close()


def _status(kubectl: Kubectl, pod: str) -> dict:
    return json.loads(kubectl("get", "pod", pod, "-o", "json"))["status"]  # type: ignore[no-any-return]


def _table_status(kubectl: Kubectl, pod: str) -> str:
    return kubectl("get", "pod", pod, "--no-headers").split()[2]


def test_exit_code_and_restart_policies(served: tuple[Cluster, Kubectl]) -> None:
    c, kubectl = served
    kubectl(
        "run", "exit-never", "--image=busybox:1.36", "--restart=Never", "--", "sh", "-c", "echo hi; exit 3"
    )
    kubectl("run", "exit-always", "--image=busybox:1.36", "--", "sh", "-c", "exit 3")
    kubectl("run", "exit-onfailure", "--image=alpine:3.20", "--restart=OnFailure", "--", "sh", "-c", "exit 0")
    c.advance(120)
    st = _status(kubectl, "exit-never")
    term = st["containerStatuses"][0]["state"]["terminated"]
    assert (st["phase"], term["exitCode"], term["reason"]) == ("Failed", 3, "Error")
    assert _table_status(kubectl, "exit-never") == "Error"
    assert kubectl("logs", "exit-never") == "hi\n"
    st = _status(kubectl, "exit-always")
    cs = st["containerStatuses"][0]
    assert st["phase"] == "Running" and cs["restartCount"] >= 3
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["lastState"]["terminated"]["exitCode"] == 3
    assert _table_status(kubectl, "exit-always") in ("CrashLoopBackOff", "Error")
    st = _status(kubectl, "exit-onfailure")
    assert st["phase"] == "Succeeded" and st["containerStatuses"][0]["restartCount"] == 0
    assert _table_status(kubectl, "exit-onfailure") == "Completed"


def test_sleep_runs_on_the_virtual_clock(served: tuple[Cluster, Kubectl]) -> None:
    c, kubectl = served
    kubectl("run", "sleeper", "--image=busybox:1.36", "--restart=Never", "--", "sleep", "30")
    kubectl("run", "forever", "--image=busybox:1.36", "--", "sh", "-c", "sleep infinity")
    c.advance(10)
    assert _table_status(kubectl, "sleeper") == "Running"
    c.advance(30)
    st = _status(kubectl, "sleeper")
    term = st["containerStatuses"][0]["state"]["terminated"]
    assert (st["phase"], term["reason"], term["exitCode"]) == ("Succeeded", "Completed", 0)
    ran = _seconds(term["finishedAt"]) - _seconds(term["startedAt"])
    assert 29.0 <= ran <= 31.0, ran
    c.advance(600)
    st = _status(kubectl, "forever")
    assert st["phase"] == "Running" and st["containerStatuses"][0]["restartCount"] == 0
    assert kubectl("logs", "forever") == ""  # it prints nothing: no fake "listening on port"


def test_echo_unknown_and_unsimulated_commands(served: tuple[Cluster, Kubectl]) -> None:
    c, kubectl = served
    kubectl("run", "echo", "--image=busybox:1.36", "--restart=Never", "--", "echo", "hi")
    kubectl("run", "unknown", "--image=busybox:1.36", "--restart=Never", "--", "sh", "-c", "foo --bar")
    kubectl("run", "bash-unknown", "--image=ubuntu:24.04", "--restart=Never", "--", "bash", "-c", "foo")
    kubectl(
        "run", "wget", "--image=busybox:1.36", "--restart=Never", "--", "sh", "-c", "wget -qO- http://b:8080/"
    )
    kubectl(
        "run", "ticker", "--image=busybox:1.36", "--", "sh", "-c", "while true; do echo tick; sleep 5; done"
    )
    c.advance(21)
    assert kubectl("logs", "echo") == "hi\n"
    assert _table_status(kubectl, "echo") == "Completed"
    assert kubectl("logs", "unknown") == "sh: foo: not found\n"
    assert _status(kubectl, "unknown")["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 127
    assert kubectl("logs", "bash-unknown") == "bash: line 1: foo: command not found\n"
    term = _status(kubectl, "wget")["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 126 and "not simulated by the twin" in kubectl("logs", "wget")
    started = _seconds(_status(kubectl, "ticker")["containerStatuses"][0]["state"]["running"]["startedAt"])
    ran = c.twin.now() - started
    assert 15 < ran <= 21  # startedAt has whole seconds: a start in the same second reads 21
    assert kubectl("logs", "ticker").splitlines() == ["tick"] * (int(ran // 5) + 1)  # one per 5 s
    assert _table_status(kubectl, "ticker") == "Running"


def test_exec_form_missing_binary_cannot_start(served: tuple[Cluster, Kubectl]) -> None:
    c, kubectl = served
    kubectl("run", "nobin", "--image=busybox:1.36", "--restart=Never", "--command", "--", "curl", "http://b")
    kubectl("run", "nobash", "--image=busybox:1.36", "--restart=Never", "--", "bash", "-c", "echo hi")
    c.advance(10)
    term = _status(kubectl, "nobin")["containerStatuses"][0]["state"]["terminated"]
    assert term["reason"] == "StartError" and 'exec: "curl": executable file not found' in term["message"]
    term = _status(kubectl, "nobash")["containerStatuses"][0]["state"]["terminated"]  # busybox has no bash
    assert term["reason"] == "StartError" and 'exec: "bash": executable file not found' in term["message"]


def test_shell_without_stdin_exits_and_debug_node_pod_completes(served: tuple[Cluster, Kubectl]) -> None:
    c, kubectl = served
    out = kubectl("debug", "node/twin-worker-1", "--image=busybox:1.36", ok=False)
    pod = next(w for w in out.split() if w.startswith("node-debugger-"))
    kubectl("run", "plain-sh", "--image=busybox:1.36")  # sh reads end of file at once
    c.advance(60)
    st = _status(kubectl, pod)
    assert st["phase"] == "Succeeded"  # `sh` with no terminal attached exits 0 (restartPolicy Never)
    cs = _status(kubectl, "plain-sh")["containerStatuses"][0]
    assert cs["restartCount"] >= 2 and cs["lastState"]["terminated"]["reason"] == "Completed"


def test_interpreter_forms() -> None:
    cat = ImageCatalogue(common_images())
    pod = {"metadata": {"name": "p"}}

    def prog(image: str, script: str, files: dict[str, str] | None = None):  # noqa: ANN202
        c = {"name": "x", "image": image, "args": ["sh", "-c", script], "env": []}
        return container_program(cat.find(image), pod, c, {"GREETING": "hello"}, files or {})

    p = prog("busybox", "echo a; sleep 2; echo $GREETING && false || echo c; exit 4")
    assert p.lines == ((0.0, "a"), (2.0, "hello"), (2.0, "c")) and p.exit_code == 4 and p.runtime_s == 2.0
    p = prog("busybox", "cat /cfg/a.txt /nope", {"/cfg/a.txt": "one\ntwo\n"})
    assert [s for _, s in p.lines] == ["one", "two", "cat: can't open '/nope': No such file or directory"]
    assert p.exit_code == 1
    assert prog("busybox", "trap : TERM INT; sleep infinity & wait").exit_code is None
    assert prog("busybox", "echo hi > /tmp/x; cat /tmp/x").lines == ((0.0, "hi"),)
    assert prog("busybox", "echo hi | grep h").exit_code == 126
    assert prog("ubuntu", "foo").lines == ((0.0, "sh: 1: foo: not found"),)  # ubuntu's sh is dash
    assert prog("busybox", "echo '$GREETING' \"$GREETING\"").lines == ((0.0, "$GREETING hello"),)
    p = prog("busybox", "set -e; echo a; false; echo b")
    assert p.lines == ((0.0, "a"),) and p.exit_code == 1
    assert prog("busybox", "set -e; false || echo ok").lines == ((0.0, "ok"),)


def test_a_remembered_program_is_the_one_its_inputs_give() -> None:
    """The interpreter's answers are remembered (a kubelet asks again at every change): a pod name,
    an environment, a mounted file or stdin that differ give their own program."""
    cat = ImageCatalogue(common_images())
    img = cat.find("busybox")

    def prog(pod: str, env: dict[str, str], files: dict[str, str], **c: object):  # noqa: ANN202
        c = {"name": "x", "image": "busybox", "env": [], **c}
        return container_program(img, {"metadata": {"name": pod}}, c, env, files)

    script = {"args": ["sh", "-c", "echo $HOSTNAME $A; cat /f"]}
    first = prog("p1", {"A": "1"}, {"/f": "x"}, **script)
    assert first.lines == ((0.0, "p1 1"), (0.0, "x"))
    assert prog("p1", {"A": "1"}, {"/f": "x"}, **script) is first
    assert prog("p2", {"A": "1"}, {"/f": "x"}, **script).lines[0] == (0.0, "p2 1")
    assert prog("p1", {"A": "2"}, {"/f": "x"}, **script).lines[0] == (0.0, "p1 2")
    assert prog("p1", {"A": "1"}, {"/f": "y"}, **script).lines[1] == (0.0, "y")
    assert prog("p1", {}, {}, args=["sh"], stdin=True).exit_code is None  # waits on its terminal
    assert prog("p1", {}, {}, args=["sh"]).exit_code == 0


def _kubeconfig(c: Cluster) -> str:
    assert c.twin.endpoints is not None
    return c.twin.endpoints.kubeconfig


def _seconds(ts: str) -> float:
    from itbench_agents.k8s.times import parse_rfc3339

    return parse_rfc3339(ts)


def test_logs_follow_streams_until_the_container_ends(served: tuple[Cluster, Kubectl]) -> None:
    """``kubectl logs -f`` keeps the stream open and prints lines as the (virtual) time reaches
    them, and ends when the followed container exits."""
    c, kubectl = served
    script = "echo first; sleep 20; echo second; sleep 20; echo third"
    kubectl("run", "talker", "--image=busybox:1.36", "--restart=Never", "--", "sh", "-c", script)
    c.advance(5)
    assert kubectl("logs", "talker") == "first\n"
    proc = subprocess.Popen(
        [KUBECTL, "--kubeconfig", _kubeconfig(c), "logs", "-f", "talker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "first\n"
        time.sleep(1.5)
        assert proc.poll() is None, "the stream stays open while the container runs"
        c.advance(20)
        assert proc.stdout.readline() == "second\n"
        assert proc.poll() is None
        c.advance(30)
        assert proc.stdout.readline() == "third\n"
        assert proc.wait(timeout=20) == 0, proc.stderr.read() if proc.stderr else ""
        assert proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()


def test_cat_reads_the_service_account_volume(served: tuple[Cluster, Kubectl]) -> None:
    c, kubectl = served
    sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount"
    kubectl("run", "whoami", "--image=busybox:1.36", "--restart=Never", "--", "cat", f"{sa_dir}/namespace")
    c.advance(10)
    assert kubectl("logs", "whoami").strip() == "chain"
    assert _table_status(kubectl, "whoami") == "Completed"
