"""Alerting rules as data (``scenarios/rules/*.yaml``, Prometheus rule-file format) evaluated on the
twin's virtual clock.

Evaluation timestamps are the multiples of the group interval (15 s) after the twin started, so the
answers are deterministic whatever the wall-clock timing of the requests. Evaluation is lazy: asking
for alerts at time ``now`` first catches up on every missed evaluation, by running each rule as one
range query over the missed steps (identical to instant queries at each step) and replaying
Prometheus' state machine: inactive → pending → firing (after ``for:``) → resolved (kept 15 min, as
Prometheus keeps resolved alerts for Alertmanager). The alerts API alone (``active``) need not
catch up: a rule whose last missed evaluations decide its active alerts answers from those, replayed
on a copy (``states_only.py``); once only the states are asked (``ask_states_only``: the harness,
after the agent's turn), catch-ups themselves run so and write no ``ALERTS`` history.

Templating of labels/annotations supports ``{{ $labels.name }}``, ``{{ $value }}``,
``{{ $value | humanize }}`` and ``{{ printf "%.2f" $value }}`` (the forms the rule files use).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import re
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..runtime import VERIFY_ENV
from ..telemetry.sources import STALE_NAN, Matcher, MetricMetadata, Series, SeriesSource, match_all
from .engine import Engine
from .memstore import MemorySeriesSource
from .states_only import active_throughout, check_same, deciding_steps
from .subquery_cache import SubqueryCache
from .syntax import binding_failed, parse
from .values import LabelKey, Labels, PromQLError, label_key

RESOLVED_RETENTION_S = 15 * 60.0
FINAL_AFTER_MS = 60_000
"""Samples a minute behind the clock are final (subquery results at or before it are kept)."""


def parse_duration_s(text: str) -> float:
    """A Prometheus duration (``1m``, ``1h30m``, ``0s``) in seconds."""
    import promql_parser as pp

    text = str(text).strip()
    if re.fullmatch(r"0+[smhdwy]?s?", text) or text == "0":
        return 0.0
    try:
        return pp.parse_duration(text).total_seconds()
    except BaseException as exc:  # noqa: BLE001 - the binding raises ValueError (or a panic type)
        if not binding_failed(exc):
            raise
        raise ValueError(f"not a valid duration string: {text!r}") from None


# --------------------------------------------------------------------------- rule files (saved data)
class AlertingRule(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    alert: str
    expr: str
    for_: str = Field("0s", alias="for")
    keep_firing_for: str = "0s"
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)

    @field_validator("expr")
    @classmethod
    def _parses(cls, v: str) -> str:
        try:
            parse(v)
        except PromQLError as exc:
            raise ValueError(exc.message) from None
        return v

    @field_validator("for_", "keep_firing_for")
    @classmethod
    def _duration(cls, v: str) -> str:
        parse_duration_s(v)
        return v

    @field_validator("alert")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", v):
            raise ValueError(f"invalid alert name: {v!r}")
        return v

    @property
    def hold_s(self) -> float:
        return parse_duration_s(self.for_)


class RuleGroup(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    interval: str = "15s"
    rules: list[AlertingRule]

    @field_validator("interval")
    @classmethod
    def _duration(cls, v: str) -> str:
        if parse_duration_s(v) <= 0:
            raise ValueError("interval must be positive")
        return v


class RuleFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    groups: list[RuleGroup]


class RuleFileError(ValueError):
    pass


_RULE_FILE_CACHE: dict[tuple[str, int, int], list[RuleGroup]] = {}


def load_rule_file(path: Path) -> list[RuleGroup]:
    """The rule groups of one file (parsed once per file version; each call gets its own copies)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    cached = _RULE_FILE_CACHE.get(key)
    if cached is None:
        cached = _parse_rule_file(path)
        if len(_RULE_FILE_CACHE) > 64:
            _RULE_FILE_CACHE.clear()
        _RULE_FILE_CACHE[key] = cached
    return [g.model_copy(deep=True) for g in cached]


def _parse_rule_file(path: Path) -> list[RuleGroup]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {"groups": []}
    except yaml.YAMLError as exc:
        raise RuleFileError(f"{path}: invalid YAML: {exc}") from None
    try:
        return RuleFile.model_validate(data).groups
    except ValidationError as exc:
        raise RuleFileError(f"{path}: {exc}") from None


def load_rules(folder: Path) -> list[tuple[str, RuleGroup]]:
    """(file, group) for every ``*.yaml`` / ``*.yml`` rule file in ``folder`` (sorted)."""
    out: list[tuple[str, RuleGroup]] = []
    if not folder.is_dir():
        return out
    for p in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        out.extend((str(p), g) for g in load_rule_file(p))
    return out


# --------------------------------------------------------------------------- templating
_TPL = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")


def fmt_value(v: float) -> str:
    """Go's ``%v`` for float64 (shortest representation)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    r = repr(float(v))
    return r[:-2] if r.endswith(".0") else r


def humanize(v: float) -> str:
    if v == 0 or math.isnan(v) or math.isinf(v):
        return fmt_value(v)
    prefixes = ["", "k", "M", "G", "T", "P", "E", "Z", "Y"]
    small = ["", "m", "u", "n", "p", "f", "a", "z", "y"]
    a = abs(v)
    if a >= 1:
        i = 0
        while a >= 1000 and i < len(prefixes) - 1:
            a /= 1000
            v /= 1000
            i += 1
        return f"{v:.4g}{prefixes[i]}"
    i = 0
    while a < 1 and i < len(small) - 1:
        a *= 1000
        v *= 1000
        i += 1
    return f"{v:.4g}{small[i]}"


def expand_template(text: str, labels: Labels, value: float) -> str:
    def rep(m: re.Match[str]) -> str:
        expr = m.group(1).strip()
        lm = re.fullmatch(r"\$labels\.([A-Za-z_][A-Za-z0-9_]*)", expr)
        if lm:
            return labels.get(lm.group(1), "")
        lm = re.fullmatch(r'index\s+\$labels\s+"([^"]*)"', expr)
        if lm:
            return labels.get(lm.group(1), "")
        if expr == "$value":
            return fmt_value(value)
        if re.fullmatch(r"\$value\s*\|\s*humanize", expr):
            return humanize(value)
        if re.fullmatch(r"\$value\s*\|\s*humanizePercentage", expr):
            return f"{value * 100:.4g}%"
        pm = re.fullmatch(r'printf\s+"([^"]*)"\s+\$value', expr)
        if pm:
            try:
                return pm.group(1) % value
            except (TypeError, ValueError):
                return m.group(0)
        return m.group(0)

    return _TPL.sub(rep, text)


# --------------------------------------------------------------------------- state
@dataclass
class Alert:
    name: str
    labels: Labels
    annotations: dict[str, str]
    state: str  # pending | firing | inactive (resolved)
    active_at: float
    value: float
    fired_at: float | None = None
    resolved_at: float | None = None
    last_sent: float | None = None

    @property
    def resolved(self) -> bool:
        return self.state == "inactive"


@dataclass
class AlertHistory:
    """Evaluation timestamps (ms) at which one alert was in one state, with its activeAt."""

    labels: Labels
    ts_ms: list[int] = field(default_factory=list)
    active_at: list[float] = field(default_factory=list)

    def add(self, ts: float, active_at: float) -> None:
        self.ts_ms.append(int(round(ts * 1000)))
        self.active_at.append(active_at)


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


@dataclass
class RuleState:
    rule: AlertingRule
    group: str
    file: str
    interval_s: float
    alerts: dict[LabelKey, Alert] = field(default_factory=dict)
    health: str = "unknown"
    last_error: str = ""
    last_evaluation: float | None = None

    def state(self) -> str:
        states = {a.state for a in self.alerts.values()}
        if "firing" in states:
            return "firing"
        if "pending" in states:
            return "pending"
        return "inactive"


class AlertEngine:
    """Evaluates alerting rules over a series source on a virtual timeline."""

    def __init__(
        self,
        source: Callable[[], SeriesSource | None],
        groups: list[tuple[str, RuleGroup]],
        *,
        start: float,
        lock: Any = None,
        cache_subqueries: bool = True,
        share_subqueries_with: AlertEngine | None = None,
    ) -> None:
        """``share_subqueries_with``: another engine over the same series source (and ``lock``),
        whose kept subquery results this one uses and adds to (the inner results at final
        timestamps are a function of the source alone: the FinOps scorer's reference rules reuse
        what the twin's own evaluation of the team's identical rules computed)."""
        self._source = source
        self.cache_subqueries = cache_subqueries
        self._subqueries_of = share_subqueries_with
        self._lock = lock if lock is not None else threading.RLock()
        self._own = threading.RLock()
        self.start = float(start)
        self.states: list[RuleState] = []
        self.groups = groups
        for file, g in groups:
            iv = parse_duration_s(g.interval)
            for r in g.rules:
                self.states.append(RuleState(r, g.name, file, iv))
        self.history: dict[LabelKey, AlertHistory] = {}
        """Per alert (and state): the evaluation times it was pending/firing, for ``ALERTS`` series."""
        self.for_state: dict[LabelKey, AlertHistory] = {}
        """Per alert: the evaluation times it was active, with activeAt (``ALERTS_FOR_STATE``)."""
        self.subquery_cache = SubqueryCache()
        """Subqueries' inner results at final timestamps, kept between evaluations."""
        self._cached_source: SeriesSource | None = None
        self.states_only = False
        """Set by :meth:`ask_states_only`: no ``ALERTS`` history, catch-ups from their last steps."""
        self._verify = os.environ.get(VERIFY_ENV, "") == "1"
        self._peeked: dict[int, tuple[tuple[float, float], RuleState]] = {}
        """Per rule (index): its state replayed from its last steps, for (next evaluation, last step)."""
        self._next: dict[int, float] = {}
        for i, st in enumerate(self.states):
            self._next[i] = math.ceil(self.start / st.interval_s) * st.interval_s

    def begin_at(self, t: float) -> None:
        """Evaluate rules from ``t`` on only, as a Prometheus started at ``t`` would: evaluations due
        before it are skipped (``Twin.for_app`` builds a week of pre-history and lets rules run over
        its last hour only; the series themselves cover the whole week)."""
        with self._own:
            self._peeked.clear()
            self.start = max(self.start, float(t))
            for i, st in enumerate(self.states):
                self._next[i] = max(self._next[i], math.ceil(self.start / st.interval_s) * st.interval_s)

    def ask_states_only(self) -> None:
        """From now on only the alerts' states are asked (the harness, once the agent's turn is over:
        pending and firing alerts, the rules' health): a rule's catch-up runs over its last
        evaluations only when they decide it (``states_only.py``: the same answers, ``activeAt``
        included), the ``ALERTS`` and ``ALERTS_FOR_STATE`` series are no longer written (reading
        them is an error) and the resolved alerts are no longer all kept."""
        with self._own:
            self.states_only = True

    def replace_file(self, file: str, groups: list[RuleGroup], now: float) -> None:
        """Load ``groups`` as the rule file ``file``, replacing what that file held (Prometheus' rule
        reload, as the Prometheus Operator triggers it when a PrometheusRule changes). Evaluations
        up to ``now`` run first under the old rules; a rule of the same group, alert name and labels
        keeps its alerts (Prometheus copies that state on reload) and is next evaluated with its new
        expression; a new rule is evaluated from the next interval after ``now``. The rules of other
        files keep their pace (they catch up when next asked, as in :meth:`evaluate_until`)."""
        self.evaluate_until(now, {st.rule.alert for st in self.states if st.file == file})
        with self._lock, self._own:
            old = {
                (st.group, st.rule.alert, tuple(sorted(st.rule.labels.items()))): (st, self._next[i])
                for i, st in enumerate(self.states)
                if st.file == file
            }
            kept = [(st, self._next[i]) for i, st in enumerate(self.states) if st.file != file]
            added: list[tuple[RuleState, float]] = []
            for g in groups:
                iv = parse_duration_s(g.interval)
                for r in g.rules:
                    st = RuleState(r, g.name, file, iv)
                    prev = old.get((g.name, r.alert, tuple(sorted(r.labels.items()))))
                    if prev is not None and prev[0].interval_s == iv:
                        st.alerts, st.health, st.last_error = (
                            prev[0].alerts,
                            prev[0].health,
                            prev[0].last_error,
                        )
                        st.last_evaluation = prev[0].last_evaluation
                        nxt = prev[1]
                    else:
                        nxt = (math.floor(max(now, self.start) / iv) + 1) * iv
                    added.append((st, nxt))
            self._peeked.clear()
            self.states = [st for st, _ in kept] + [st for st, _ in added]
            self._next = {i: nxt for i, (_, nxt) in enumerate([*kept, *added])}
            self.groups = [(f, g) for f, g in self.groups if f != file] + [(file, g) for g in groups]

    # ------------------------------------------------------------------ evaluation
    def evaluate_until(self, now: float, names: Collection[str] | None = None) -> None:
        """Run every evaluation due at or before ``now`` (multiples of the group interval); with
        ``names``, only those of the rules of these alert names (the others catch up, step by step
        as ever, when next asked)."""
        with self._lock, self._own:
            engine = self._engine(now)
            for i, st in enumerate(self.states):
                if names is not None and st.rule.alert not in names:
                    continue
                first = self._next[i]
                last = math.floor(now / st.interval_s) * st.interval_s
                if last < first:
                    continue
                if self.states_only:
                    self._evaluate_states(engine, st, first, last)
                else:
                    self._evaluate_range(engine, st, first, last)
                self._next[i] = last + st.interval_s

    def _engine(self, now: float) -> Engine:
        """A PromQL engine over the source for evaluations up to ``now``."""
        src = self._source()
        self.subquery_cache = self._subquery_cache_for(src)
        self.subquery_cache.new_round(int(now * 1000) - FINAL_AFTER_MS)
        return Engine(
            src if src is not None else MemorySeriesSource(),
            timeout_s=60.0,
            subquery_cache=self.subquery_cache if self.cache_subqueries else None,
        )

    def _subquery_cache_for(self, src: SeriesSource | None) -> SubqueryCache:
        """The subquery cache for ``src``: this engine's, or the one it shares; a new one for another
        source (nothing kept applies)."""
        owner = self._subqueries_of if self._subqueries_of is not None else self
        if src is not owner._cached_source:
            owner._cached_source, owner.subquery_cache = src, SubqueryCache()
            self._peeked.clear()
        return owner.subquery_cache

    def _results(
        self, engine: Engine, st: RuleState, first: float, last: float, skip: int = 0
    ) -> list[dict[LabelKey, tuple[Labels, float]]]:
        """The rule's results at each evaluation of ``first..last`` from the ``skip``-th on (raises
        :class:`PromQLError`)."""
        step_ms = int(round(st.interval_s * 1000))
        start_ms, end_ms = int(round(first * 1000)) + skip * step_ms, int(round(last * 1000))
        n = (end_ms - start_ms) // step_ms + 1
        per_step: list[dict[LabelKey, tuple[Labels, float]]] = [{} for _ in range(max(n, 0))]
        # long catch-ups run in chunks below the 11,000-points limit
        chunk = 10_000
        for c0 in range(0, n, chunk):
            c1 = min(n, c0 + chunk) - 1
            res = engine.range(st.rule.expr, start_ms + c0 * step_ms, start_ms + c1 * step_ms, step_ms)
            for lb, ts, vs in res.matrix:
                lb2 = {k: v for k, v in lb.items() if k != "__name__"}
                for t, v in zip(ts.tolist(), vs.tolist(), strict=True):
                    j = (int(t) - start_ms) // step_ms
                    per_step[j][label_key(lb2)] = (lb2, float(v))
        return per_step

    def _evaluate_range(
        self,
        engine: Engine,
        st: RuleState,
        first: float,
        last: float,
        known: list[dict[LabelKey, tuple[Labels, float]]] | None = None,
        record: bool = True,
    ) -> None:
        """Every evaluation of ``first..last``; ``known``: the results of its last ones, already
        evaluated; ``record``: write the ``ALERTS`` history (not for a copy)."""
        n = int(round((last - first) / st.interval_s)) + 1
        try:
            per_step = self._results(engine, st, first, last - len(known) * st.interval_s) if known else []
            per_step += known or self._results(engine, st, first, last)
            st.health, st.last_error = "ok", ""
        except PromQLError as exc:
            st.health, st.last_error = "err", exc.message
            st.last_evaluation = last
            return
        for j in range(n):
            self._step(st, first + j * st.interval_s, per_step[j], record)
        st.last_evaluation = last

    def _evaluate_states(self, engine: Engine, st: RuleState, first: float, last: float) -> None:
        """:meth:`_evaluate_range` once only the states are asked: from the last evaluations where
        they decide the catch-up, else all of it (``states_only.py``)."""
        known, decided = self._last_steps(engine, st, first, last)
        if not decided:
            self._evaluate_range(engine, st, first, last, known)
            return
        self._replay_last(engine, st, st, first, last, known or [])

    def _last_steps(
        self, engine: Engine, st: RuleState, first: float, last: float
    ) -> tuple[list[dict[LabelKey, tuple[Labels, float]]] | None, bool]:
        """The results of the catch-up's last ``for``/interval + 1 evaluations, and whether they
        decide it (no alert active through them); None where there are no fewer steps, or they
        fail (the whole catch-up reports the error, as ever)."""
        n = int(round((last - first) / st.interval_s)) + 1
        k = deciding_steps(n, st.interval_s, st.rule.hold_s)
        if k == n:
            return None, False
        try:
            known = self._results(engine, st, first, last, skip=n - k)
        except PromQLError:
            return None, False
        alerts_at = [{label_key(self._alert_labels(st.rule, lb, v)) for lb, v in r.values()} for r in known]
        return known, not active_throughout(alerts_at)

    def _replay_last(
        self,
        engine: Engine,
        target: RuleState,
        st: RuleState,
        first: float,
        last: float,
        known: list[dict[LabelKey, tuple[Labels, float]]],
    ) -> None:
        """Step ``target`` (``st`` or a copy of it) through the last evaluations of ``first..last``
        (``known``) alone, writing no history; with ``ITBENCH_TWIN_VERIFY_VERDICTS=1`` compared
        with the whole catch-up on another copy of ``st``."""
        full = self._whole_on_a_copy(engine, st, first, last)
        n = int(round((last - first) / st.interval_s)) + 1
        target.health, target.last_error = "ok", ""
        for j, results in enumerate(known):
            self._step(target, first + (n - len(known) + j) * st.interval_s, results, record=False)
        target.last_evaluation = last
        if full is not None:
            check_same(target, full)

    def _whole_on_a_copy(self, engine: Engine, st: RuleState, first: float, last: float) -> RuleState | None:
        """With ``ITBENCH_TWIN_VERIFY_VERDICTS=1``: the whole catch-up on a copy, to compare."""
        if not self._verify:
            return None
        full = dataclasses.replace(st, alerts=copy.deepcopy(st.alerts))
        self._evaluate_range(engine, full, first, last, record=False)
        return full

    def _peek(self, engine: Engine, i: int, st: RuleState, now: float) -> RuleState:
        """Rule ``i``'s state at ``now`` for the alerts' states alone: where its last evaluations
        decide them, those replayed on a copy (kept until it catches up or ``now`` moves a step),
        the rule itself not caught up (what needs every evaluation — the ``ALERTS`` series, the
        rules API, a reload — catches it up as ever); else the rule caught up."""
        first, last = self._next[i], math.floor(now / st.interval_s) * st.interval_s
        if last < first:
            return st
        if self.states_only:
            self._evaluate_states(engine, st, first, last)
        else:
            kept = self._peeked.get(i)
            if kept is not None and kept[0] == (first, last):
                return kept[1]
            known, decided = self._last_steps(engine, st, first, last)
            if decided:
                view = dataclasses.replace(st, alerts=copy.deepcopy(st.alerts))
                self._replay_last(engine, view, st, first, last, known or [])
                self._peeked[i] = ((first, last), view)
                return view
            self._evaluate_range(engine, st, first, last, known)
        self._next[i] = last + st.interval_s
        return st

    @staticmethod
    def _alert_labels(rule: AlertingRule, lb: Labels, value: float) -> Labels:
        """An alert's labels: the result's, the rule's (templated) and ``alertname``."""
        labels = dict(lb)
        for k, v in rule.labels.items():
            labels[k] = expand_template(v, lb, value)
        labels["alertname"] = rule.alert
        return labels

    def _step(
        self, st: RuleState, ts: float, results: dict[LabelKey, tuple[Labels, float]], record: bool = True
    ) -> None:
        rule = st.rule
        seen: set[LabelKey] = set()
        for lb, value in results.values():
            labels = self._alert_labels(rule, lb, value)
            annotations = {k: expand_template(v, lb, value) for k, v in rule.annotations.items()}
            fp = label_key(labels)
            seen.add(fp)
            cur = st.alerts.get(fp)
            if cur is not None and cur.state != "inactive":
                cur.value = value
                cur.annotations = annotations
                continue
            st.alerts[fp] = Alert(rule.alert, labels, annotations, "pending", ts, value)
        for fp, a in list(st.alerts.items()):
            if fp not in seen:
                if a.state == "pending" or (
                    a.resolved_at is not None and ts - a.resolved_at > RESOLVED_RETENTION_S
                ):
                    del st.alerts[fp]
                if a.state != "inactive":
                    a.state = "inactive"
                    a.resolved_at = ts
                continue
            if a.state == "pending" and ts - a.active_at >= rule.hold_s:
                a.state = "firing"
                a.fired_at = ts
        if not record or self.states_only:  # no ALERTS history written (ask_states_only)
            return
        for a in st.alerts.values():
            if a.state in ("pending", "firing"):
                key = label_key({**a.labels, "alertstate": a.state})
                h = self.history.get(key)
                if h is None:
                    h = self.history[key] = AlertHistory({**a.labels, "alertstate": a.state})
                h.add(ts, a.active_at)
                fk = label_key(a.labels)
                fh = self.for_state.get(fk)
                if fh is None:
                    fh = self.for_state[fk] = AlertHistory(dict(a.labels))
                fh.add(ts, a.active_at)

    # ------------------------------------------------------------------ queries
    def active(self, now: float, names: Collection[str] | None = None) -> list[Alert]:
        """Pending and firing alerts at ``now`` (of the rules of alert ``names`` only, if given). A
        rule whose last evaluations decide them answers from those (:meth:`_peek`); the order of
        one rule's alerts may then differ from a caught-up rule's (Prometheus' is a Go map's)."""
        with self._lock, self._own:
            engine = self._engine(now)
            return [
                a
                for i, st in enumerate(self.states)
                if names is None or st.rule.alert in names
                for a in self._peek(engine, i, st, now).alerts.values()
                if a.state in ("pending", "firing")
            ]

    def last_eval_ms(self, alertname: str) -> int | None:
        """The latest evaluation time (ms) of the rule named ``alertname``."""
        for st in self.states:
            if st.rule.alert == alertname and st.last_evaluation is not None:
                return int(round(st.last_evaluation * 1000))
        return None

    def firing(self, now: float, names: Collection[str] | None = None) -> list[Alert]:
        return [a for a in self.active(now, names) if a.state == "firing"]

    def resolved(self, now: float) -> list[Alert]:
        """Alerts resolved within the last 15 minutes (not all kept once only the states are asked)."""
        if self.states_only:
            raise RuntimeError("the resolved alerts are not all kept once only the states are asked")
        self.evaluate_until(now)
        with self._own:
            return [a for st in self.states for a in st.alerts.values() if a.state == "inactive"]

    def firing_names(self, now: float) -> set[str]:
        return {a.name for a in self.firing(now)}

    def rules(self, now: float | None = None, names: Collection[str] | None = None) -> list[dict[str, Any]]:
        """Rule groups in the shape of ``/api/v1/rules`` ``data.groups``; with ``names`` (its
        ``rule_name[]``), only those rules, evaluated up to ``now`` (the others catch up when next
        asked, as in :meth:`evaluate_until`), and only the groups holding one of them."""
        if now is not None:
            self.evaluate_until(now, names)
        out: list[dict[str, Any]] = []
        with self._own:
            by_group: dict[tuple[str, str], list[RuleState]] = {}
            for st in self.states:
                if names is None or st.rule.alert in names:
                    by_group.setdefault((st.file, st.group), []).append(st)
            for (file, name), states in by_group.items():
                rules = []
                for st in states:
                    rules.append(
                        {
                            "state": st.state(),
                            "name": st.rule.alert,
                            "query": st.rule.expr,
                            "duration": st.rule.hold_s,
                            "keepFiringFor": parse_duration_s(st.rule.keep_firing_for),
                            "labels": dict(st.rule.labels),
                            "annotations": dict(st.rule.annotations),
                            "alerts": [alert_json(a) for a in st.alerts.values() if a.state != "inactive"],
                            "health": st.health,
                            "lastError": st.last_error,
                            "evaluationTime": 0.0,
                            "lastEvaluation": rfc3339(st.last_evaluation)
                            if st.last_evaluation is not None
                            else "0001-01-01T00:00:00Z",
                            "type": "alerting",
                        }
                    )
                out.append(
                    {
                        "name": name,
                        "file": file,
                        "rules": rules,
                        "interval": states[0].interval_s,
                        "limit": 0,
                        "evaluationTime": 0.0,
                        "lastEvaluation": rules[0]["lastEvaluation"] if rules else "0001-01-01T00:00:00Z",
                    }
                )
        return out


class AlertSeriesSource:
    """``ALERTS`` and ``ALERTS_FOR_STATE`` series of an :class:`AlertEngine` as a SeriesSource, as
    Prometheus writes them at each rule evaluation (value 1 / activeAt; a staleness marker at the first
    evaluation after an alert left that state)."""

    NAMES = ("ALERTS", "ALERTS_FOR_STATE")

    def __init__(self, engine: AlertEngine, now: Callable[[], float]) -> None:
        self.engine = engine
        self.now = now

    def _series(self, end_ms: int) -> list[Series]:
        if self.engine.states_only:
            raise PromQLError("the ALERTS series are not written once only the alerts' states are asked")
        self.engine.evaluate_until(min(end_ms / 1000.0, float(self.now())))
        with self.engine._own:
            alerts = list(self.engine.history.values())
            for_state = list(self.engine.for_state.values())
            intervals = {st.rule.alert: st.interval_s for st in self.engine.states}
        out: list[Series] = []
        for name, items, value_of in (
            ("ALERTS", alerts, lambda h, i: 1.0),
            ("ALERTS_FOR_STATE", for_state, lambda h, i: h.active_at[i]),
        ):
            for h in items:
                alertname = h.labels.get("alertname", "")
                step = int(round(intervals.get(alertname, 15.0) * 1000))
                ts: list[int] = []
                vals: list[float] = []
                for i, t in enumerate(h.ts_ms):
                    if i and t - h.ts_ms[i - 1] > step:  # left the state in between: staleness marker
                        ts.append(h.ts_ms[i - 1] + step)
                        vals.append(STALE_NAN)
                    ts.append(t)
                    vals.append(value_of(h, i))
                last_eval = self.engine.last_eval_ms(alertname)
                if ts and last_eval is not None and last_eval > ts[-1]:
                    ts.append(ts[-1] + step)
                    vals.append(STALE_NAN)
                out.append(
                    Series({**h.labels, "__name__": name}, np.array(ts, dtype=np.int64), np.array(vals))
                )
        return out

    def select(self, matchers: Sequence[Matcher], start_ms: int, end_ms: int) -> list[Series]:
        name_ms = [m for m in matchers if m.name == "__name__"]
        if name_ms and not any(all(m.matches({"__name__": n}) for m in name_ms) for n in self.NAMES):
            return []  # not about alerts: no rule evaluation needed
        res = []
        for s in self._series(end_ms):
            if match_all(matchers, s.labels):
                keep = (s.timestamps_ms >= start_ms) & (s.timestamps_ms <= end_ms)
                if keep.any():
                    res.append(Series(s.labels, s.timestamps_ms[keep], s.values[keep]))
        return res

    def label_names(self, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()) -> list[str]:
        return sorted({k for s in self.select(list(matchers), start_ms, end_ms) for k in s.labels})

    def label_values(
        self, name: str, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()
    ) -> list[str]:
        return sorted(
            {s.labels[name] for s in self.select(list(matchers), start_ms, end_ms) if name in s.labels}
        )

    def metadata(self) -> dict[str, MetricMetadata]:
        return {
            "ALERTS": MetricMetadata("gauge", "Alerts in pending or firing state (value 1)."),
            "ALERTS_FOR_STATE": MetricMetadata("gauge", "The time (unix seconds) an alert became active."),
        }


def alert_json(a: Alert) -> dict[str, Any]:
    """An alert as ``/api/v1/alerts`` shows it."""
    return {
        "labels": dict(a.labels),
        "annotations": dict(a.annotations),
        "state": a.state,
        "activeAt": rfc3339(a.active_at),
        "value": fmt_value(a.value),
    }


def install_alerts(twin: Any) -> AlertEngine:
    """Set ``twin.alerts`` to an :class:`AlertEngine` over ``twin.metrics`` with the rules in
    ``scenarios/rules/`` and those of the installed addons (``rule_files()``: OpenCost's cost
    alerts), evaluating from the twin's start time."""
    from ...paths import scenarios_dir

    groups = load_rules(scenarios_dir() / "rules")
    for addon in (getattr(twin, "addons", None) or {}).values():  # addons with alerts of their own
        rule_files = getattr(addon, "rule_files", None)
        if callable(rule_files):
            for f in rule_files():
                groups.extend((str(f), g) for g in load_rule_file(f))
    engine = AlertEngine(lambda: twin.metrics, groups, start=float(twin.created_at), lock=twin.lock)
    twin.alerts = engine
    for addon in (getattr(twin, "addons", None) or {}).values():  # rules kept as objects (PrometheusRule)
        load_existing = getattr(addon, "load_existing", None)
        if callable(load_existing):
            load_existing()
    return engine
