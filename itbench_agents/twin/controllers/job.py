"""Jobs (parallelism, completions, backoffLimit; Complete/Failed conditions) and CronJobs
(standard 5-field schedules on the virtual clock, UTC; concurrency policies; history limits)."""

from __future__ import annotations

import contextlib
import math
from datetime import UTC, datetime, timedelta
from typing import Any

from ...k8s.readiness import is_ready
from ...k8s.times import parse_rfc3339, rfc3339
from ..kube.errors import ApiError
from ..kube.pod_deletion import delete_pod
from ..kube.store import ChangeEvent, clone
from .base import Controller, update_status
from .events import record_event
from .index import owner_ref
from .kinds import CRONJOBS, JOBS, PODS
from .workload import create_pod, pod_from_template

Obj = dict[str, Any]


def _cond(ctype: str, reason: str, message: str, ts: str) -> Obj:
    return {
        "type": ctype,
        "status": "True",
        "lastProbeTime": ts,
        "lastTransitionTime": ts,
        "reason": reason,
        "message": message,
    }


class JobController(Controller):
    name = "job-controller"

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        if ev.gr == JOBS and ev.type != "DELETED":
            self.enqueue((meta.get("namespace", ""), meta["name"]))
        elif ev.gr == PODS:
            self.enqueue_owner(ev.obj, JOBS)

    def sync(self, key: tuple[str, str]) -> None:
        ns, name = key
        job = self.store.get(JOBS, ns, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        status = clone(job.get("status") or {})
        conds = status.get("conditions") or []
        finished = any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conds)
        spec = job.get("spec", {})
        uid = job["metadata"]["uid"]
        pods = self.index.owned(uid, PODS)
        succeeded = sum(1 for p in pods if p.get("status", {}).get("phase") == "Succeeded")
        failed_pods = sum(1 for p in pods if p.get("status", {}).get("phase") == "Failed")
        restarts = sum(
            int(c.get("restartCount", 0))
            for p in pods
            for c in p.get("status", {}).get("containerStatuses") or []
        )
        active = [
            p
            for p in pods
            if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
            and not p["metadata"].get("deletionTimestamp")
        ]
        now = self.now()
        ts = rfc3339(now)
        status.setdefault("startTime", ts)
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
        backoff_limit = int(spec.get("backoffLimit", 6) if spec.get("backoffLimit") is not None else 6)
        if not finished and not spec.get("suspend"):
            if failed_pods + restarts > backoff_limit:
                for p in active:
                    with contextlib.suppress(ApiError):
                        delete_pod(self.store, p)
                active = []
                conds = conds + [
                    _cond(
                        "FailureTarget",
                        "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit",
                        ts,
                    ),
                    _cond(
                        "Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit", ts
                    ),
                ]
                record_event(
                    self.twin,
                    job,
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                    type="Warning",
                    component=self.name,
                )
                finished = True
            elif (completions is not None and succeeded >= int(completions)) or (
                completions is None and succeeded > 0 and not active
            ):
                conds = conds + [
                    _cond(
                        "SuccessCriteriaMet",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods",
                        ts,
                    ),
                    _cond("Complete", "CompletionsReached", "Reached expected number of succeeded pods", ts),
                ]
                status["completionTime"] = ts
                record_event(self.twin, job, "Completed", "Job completed", component=self.name)
                finished = True
            elif failed_pods and (wait_until := _failure_backoff_until(pods, failed_pods)) > now:
                self.enqueue_at(wait_until, key)
            else:
                remaining = parallelism - len(active)
                if completions is not None:
                    remaining = min(remaining, int(completions) - succeeded - len(active))
                elif succeeded > 0:
                    remaining = 0
                for _ in range(max(0, remaining)):
                    labels = {
                        "batch.kubernetes.io/controller-uid": uid,
                        "batch.kubernetes.io/job-name": name,
                        "controller-uid": uid,
                        "job-name": name,
                    }
                    pod = pod_from_template(
                        job,
                        "batch/v1",
                        "Job",
                        spec.get("template") or {},
                        f"{name}-{self.store.random_suffix()}",
                        labels,
                    )
                    try:
                        created = create_pod(self.twin, pod)
                    except ApiError as e:
                        record_event(
                            self.twin,
                            job,
                            "FailedCreate",
                            f"Error creating: {e.message}",
                            type="Warning",
                            component=self.name,
                        )
                        self.enqueue_at(now + 10.0, key)
                        break
                    record_event(
                        self.twin,
                        job,
                        "SuccessfulCreate",
                        f"Created pod: {created['metadata']['name']}",
                        component=self.name,
                    )
                    active.append(created)
        status["active"] = len(active)
        status["succeeded"] = succeeded
        status["failed"] = failed_pods
        status["ready"] = sum(1 for p in active if is_ready(p))
        status["terminating"] = 0
        status["uncountedTerminatedPods"] = {}
        if conds:
            status["conditions"] = conds
        for k in ("active", "succeeded", "failed"):
            if status[k] == 0:
                del status[k]
        update_status(self.twin, JOBS, job, status)


def _failure_backoff_until(pods: list[Obj], failures: int) -> float:
    """Failed pods are replaced after 10 s, 20 s, 40 s ... (at most 6 min) from the last failure."""
    last = 0.0
    for p in pods:
        if p.get("status", {}).get("phase") != "Failed":
            continue
        for c in p.get("status", {}).get("containerStatuses") or []:
            fin = ((c.get("state") or {}).get("terminated") or {}).get("finishedAt")
            if fin:
                last = max(last, parse_rfc3339(fin))
    return last + min(10.0 * 2 ** (failures - 1), 360.0)


# ------------------------------------------------------------------------------------ cron
_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def _field(spec: str, lo: int, hi: int) -> set[int]:
    out: set[int] = set()
    for part in spec.split(","):
        step = 1
        if "/" in part:
            part, s = part.split("/", 1)
            step = int(s)
        if part in ("*", "?"):
            a, b = lo, hi
        elif "-" in part:
            x, y = part.split("-", 1)
            a, b = int(x), int(y)
        else:
            a = int(part)
            b = hi if step > 1 else a
        out.update(range(a, b + 1, step))
    return out


class CronSchedule:
    """A parsed 5-field cron schedule (minute hour day-of-month month day-of-week), UTC."""

    def __init__(self, text: str) -> None:
        text = _ALIASES.get(text.strip(), text.strip())
        parts = text.split()
        if len(parts) != 5:
            raise ValueError(f"expected exactly 5 fields, found {len(parts)}: {text}")
        self.minutes = _field(parts[0], 0, 59)
        self.hours = _field(parts[1], 0, 23)
        self.dom = _field(parts[2], 1, 31)
        self.months = _field(parts[3], 1, 12)
        self.dow = {d % 7 for d in _field(parts[4], 0, 7)}
        self.dom_star = parts[2] in ("*", "?")
        self.dow_star = parts[4] in ("*", "?")

    def _day_ok(self, t: datetime) -> bool:
        dom_ok = t.day in self.dom
        dow_ok = (t.isoweekday() % 7) in self.dow
        if self.dom_star or self.dow_star:
            return dom_ok and dow_ok
        return dom_ok or dow_ok

    def next_after(self, ts: float) -> float:
        """The first minute after ``ts`` the schedule matches, within a year (else ValueError):
        a day that does not match is skipped whole, then an hour, then the minutes."""
        t = datetime.fromtimestamp(math.floor(ts / 60) * 60, tz=UTC) + timedelta(minutes=1)
        end = t + timedelta(minutes=366 * 24 * 60)
        while t < end:
            if t.month not in self.months or not self._day_ok(t):
                t = (t + timedelta(days=1)).replace(hour=0, minute=0)
            elif t.hour not in self.hours:
                t = (t + timedelta(hours=1)).replace(minute=0)
            else:
                later = [m for m in self.minutes if m >= t.minute]
                if later:
                    found = t.replace(minute=min(later))
                    if found >= end:
                        break
                    return found.timestamp()
                t = (t + timedelta(hours=1)).replace(minute=0)
        raise ValueError("no run time within a year")


class CronJobController(Controller):
    name = "cronjob-controller"

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        if ev.gr == CRONJOBS:
            if ev.type == "DELETED":
                self.twin.scheduler.cancel((self.name, "timer", (meta.get("namespace", ""), meta["name"])))
            else:
                self.enqueue((meta.get("namespace", ""), meta["name"]))
        elif ev.gr == JOBS:
            self.enqueue_owner(ev.obj, CRONJOBS)

    def sync(self, key: tuple[str, str]) -> None:
        ns, name = key
        cj = self.store.get(CRONJOBS, ns, name)
        if cj is None:
            return
        spec = cj.get("spec", {})
        try:
            sched = CronSchedule(str(spec.get("schedule", "")))
        except ValueError:
            return
        now = self.now()
        status = clone(cj.get("status") or {})
        jobs = sorted(self.index.owned(cj["metadata"]["uid"], JOBS), key=lambda j: j["metadata"]["name"])
        active = [j for j in jobs if not _job_finished(j)]
        # history
        for kind, limit_key, default in (
            ("Complete", "successfulJobsHistoryLimit", 3),
            ("Failed", "failedJobsHistoryLimit", 1),
        ):
            done = [j for j in jobs if _job_finished(j) == kind]
            limit = int(spec.get(limit_key, default) if spec.get(limit_key) is not None else default)
            for j in done[: max(0, len(done) - limit)]:
                try:
                    self.store.delete(JOBS, ns, j["metadata"]["name"])
                    record_event(
                        self.twin,
                        cj,
                        "SuccessfulDelete",
                        f"Deleted job {j['metadata']['name']}",
                        component=self.name,
                    )
                except ApiError:
                    pass
            if kind == "Complete" and done:
                status["lastSuccessfulTime"] = (done[-1].get("status") or {}).get(
                    "completionTime", rfc3339(now)
                )
        last = status.get("lastScheduleTime")
        base = (
            parse_rfc3339(last)
            if last
            else parse_rfc3339(cj["metadata"].get("creationTimestamp", rfc3339(now)))
        )
        due = sched.next_after(base)
        if due <= now and not spec.get("suspend"):
            # only the most recent missed time runs
            while True:
                nxt = sched.next_after(due)
                if nxt > now:
                    break
                due = nxt
            policy = spec.get("concurrencyPolicy", "Allow")
            run = True
            if active and policy == "Forbid":
                run = False
            elif active and policy == "Replace":
                for j in active:
                    with contextlib.suppress(ApiError):
                        self.store.delete(JOBS, ns, j["metadata"]["name"])
                active = []
            if run:
                jname = f"{name}-{int(due // 60)}"
                if self.store.get(JOBS, ns, jname) is None:
                    tmpl = spec.get("jobTemplate") or {}
                    job = {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "metadata": {
                            "name": jname,
                            "namespace": ns,
                            "labels": dict((tmpl.get("metadata") or {}).get("labels") or {}),
                            "annotations": {"batch.kubernetes.io/cronjob-scheduled-timestamp": rfc3339(due)},
                            "ownerReferences": [owner_ref(cj, "batch/v1", "CronJob")],
                        },
                        "spec": clone(tmpl.get("spec") or {}),
                    }
                    created = self.store.create(JOBS, job)
                    active.append(created)
                    record_event(
                        self.twin, cj, "SuccessfulCreate", f"Created job {jname}", component=self.name
                    )
                status["lastScheduleTime"] = rfc3339(due)
            else:
                status["lastScheduleTime"] = rfc3339(due)
            due = sched.next_after(due)
        status["active"] = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": j["metadata"]["name"],
                "namespace": ns,
                "uid": j["metadata"]["uid"],
            }
            for j in active
        ]
        if not status["active"]:
            del status["active"]
        update_status(self.twin, CRONJOBS, cj, status)
        self.enqueue_at(max(due, now), key)


def _job_finished(job: Obj) -> str | None:
    for c in job.get("status", {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return None
