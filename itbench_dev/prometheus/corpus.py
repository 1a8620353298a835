"""A corpus of realistic SRE PromQL queries (what NL2Metrics agents and the alert rules ask), shared
by the differential test against real Prometheus and by ``benchmarks/promql.py``."""

from __future__ import annotations

from dataclasses import dataclass

CALLS = "traces_span_metrics_calls_total"
BUCKET = "traces_span_metrics_duration_milliseconds_bucket"
ERR = 'status_code="STATUS_CODE_ERROR"'
NOISE = 'service_name!~"flagd|load-generator"'


@dataclass(frozen=True)
class CorpusQuery:
    name: str
    expr: str


CORPUS: list[CorpusQuery] = [
    CorpusQuery("request_rate_by_service", f"sum by (service_name) (rate({CALLS}[5m]))"),
    CorpusQuery(
        "error_ratio_by_service",
        f"sum by (service_name) (rate({CALLS}{{{ERR}}}[5m])) / sum by (service_name) (rate({CALLS}[5m]))",
    ),
    CorpusQuery(
        "p95_latency_by_service",
        f"histogram_quantile(0.95, sum by (le, service_name) (rate({BUCKET}{{{NOISE}}}[5m])))",
    ),
    CorpusQuery(
        "p99_latency_by_operation",
        f"histogram_quantile(0.99, sum by (le, service_name, span_name) (rate({BUCKET}[10m])))",
    ),
    CorpusQuery(
        "mean_latency",
        "sum by (service_name) (rate(traces_span_metrics_duration_milliseconds_sum[5m]))"
        " / sum by (service_name) (rate(traces_span_metrics_duration_milliseconds_count[5m]))",
    ),
    CorpusQuery(
        "alert_error_rate", f"sum by (service_name, namespace) (irate({CALLS}{{{ERR}, {NOISE}}}[2m])) > 0"
    ),
    # (error counts tie often; topk/bottomk on ties is implementation-defined, so rank total traffic)
    CorpusQuery("topk_busiest_services", f"topk(3, sum by (service_name) (rate({CALLS}[5m])))"),
    CorpusQuery(
        "bottomk_traffic",
        f"bottomk(2, sum without (span_name, status_code, job, span_kind) (rate({CALLS}[5m])))",
    ),
    CorpusQuery("restarts_increase", "increase(kube_pod_container_status_restarts_total[15m])"),
    CorpusQuery("restarts_changes", "changes(kube_pod_container_status_restarts_total[30m])"),
    CorpusQuery("pending_pods", 'sum by (namespace, pod) (kube_pod_status_phase{phase="Pending"}) > 0'),
    CorpusQuery("phase_counts", "sum without (pod, uid) (kube_pod_status_phase)"),
    CorpusQuery("not_running", 'kube_pod_status_phase{phase=~"Pending|Failed|Unknown"} == 1'),
    CorpusQuery("rate_offset_10m", f"sum by (service_name) (rate({CALLS}[5m] offset 10m))"),
    CorpusQuery(
        "traffic_change_vs_10m_ago",
        f"sum by (service_name) (rate({CALLS}[5m])) - sum by (service_name) (rate({CALLS}[5m] offset 10m))",
    ),
    CorpusQuery(
        "max_error_rate_subquery",
        f"max_over_time(sum by (service_name) (rate({CALLS}{{{ERR}}}[1m]))[10m:1m])",
    ),
    CorpusQuery("cpu_usage", "sum by (pod) (rate(container_cpu_usage_seconds_total[5m]))"),
    CorpusQuery(
        "memory_utilisation",
        "container_memory_working_set_bytes / on (namespace, pod, container) container_spec_memory_limit_bytes",
    ),
    CorpusQuery("memory_trend", "deriv(container_memory_working_set_bytes[10m])"),
    CorpusQuery("memory_forecast", "predict_linear(container_memory_working_set_bytes[15m], 3600)"),
    CorpusQuery("kafka_lag_high", "sum by (consumergroup, topic) (kafka_consumergroup_lag) > 100"),
    CorpusQuery("kafka_lag_p90", "quantile_over_time(0.9, kafka_consumergroup_lag[10m])"),
    CorpusQuery("kafka_lag_delta", "delta(kafka_consumergroup_lag[5m])"),
    CorpusQuery("avg_irate", f"avg by (service_name) (irate({CALLS}[2m]))"),
    CorpusQuery("stddev_rate", f"stddev by (service_name) (rate({CALLS}[5m]))"),
    CorpusQuery("count_series", f"count by (service_name) ({CALLS})"),
    CorpusQuery("rate_bool", f"sum by (service_name) (rate({CALLS}[5m])) > bool 5"),
    CorpusQuery(
        "label_replace_pod_service",
        'label_replace(kube_pod_container_status_restarts_total, "svc", "$1", "pod", "(.+?)-[a-z0-9]+-[a-z0-9]{5}")',
    ),
    CorpusQuery(
        "error_and_slow",
        f"(sum by (service_name) (rate({CALLS}{{{ERR}}}[5m])) > 0.1) and on (service_name) "
        f"(histogram_quantile(0.95, sum by (le, service_name) (rate({BUCKET}[5m]))) > 500)",
    ),
    CorpusQuery("absent_metric", 'absent(up{job="nonexistent"})'),
    CorpusQuery("avg_over_time_lag", "avg_over_time(kafka_consumergroup_lag[5m])"),
    CorpusQuery(
        "max_over_time_memory", "max by (pod) (max_over_time(container_memory_working_set_bytes[30m]))"
    ),
]


# Broader coverage for the differential test (operators, aggregations, functions, @/offset, subqueries):
# expressions whose answer is the same in Prometheus 2.42 and 3.x on the synthetic data (no ties in
# topk/bottomk, no sample or subquery step on a window boundary, no counter starting inside a window).
_EDGE = [
    "sum($C)",
    "avg($C)",
    "min($C)",
    "max($C)",
    "count($C)",
    "group($C)",
    "stddev(rate($C[5m]))",
    "stdvar(rate($C[5m]))",
    "quantile(0.3, rate($C[5m]))",
    "quantile by (service_name) (0.9, rate($C[5m]))",
    'count_values("v", kube_pod_status_phase)',
    'count_values without (pod, uid) ("v", kube_pod_status_phase)',
    "topk(2, rate($C[5m]))",
    "topk(scalar(count(up)) - 12, sum by (service_name) (rate($C[5m])))",
    "sum without (le) (rate(traces_span_metrics_duration_milliseconds_bucket[5m]))",
    "avg by (namespace) ($M)",
    "max by (node) ($M) / min by (node) ($M)",
    "sum by (service_name) (rate($C[5m])) / ignoring (service_name) group_left sum(rate($C[5m]))",
    "sum by (service_name, status_code) (rate($C[5m])) / on (service_name) group_left sum by (service_name) (rate($C[5m]))",
    'sum by (service_name) (rate($C[5m])) and on (service_name) sum by (service_name) (rate($C{status_code="STATUS_CODE_ERROR"}[5m])) > 0',
    'sum by (service_name) (rate($C[5m])) unless on (service_name) sum by (service_name) (rate($C{status_code="STATUS_CODE_ERROR"}[5m])) > 0',
    'sum by (service_name) (rate($C{status_code="STATUS_CODE_ERROR"}[5m]) > 0) or sum by (service_name) (rate($C[5m]))',
    "$M @ 1700002000",
    'rate($C{service_name="cart"}[5m] @ 1700002000)',
    "$M offset 10m",
    "$M offset -10m",
    "rate($C[5m] offset 1h)",
    'max_over_time(rate($C{service_name="payment"}[1m])[15m:30s])',
    "min_over_time(max_over_time($L[5m])[10m:])",
    "rate(sum by (service_name) ($C)[5m:15s])",
    "avg_over_time(sum($L)[30m:5m] offset 5m)",
    "deriv(sum($M)[10m:1m])",
    "sin($L) + cos($L) - tan($L / 1000)",
    "asin($L / 1000) + acos($L / 1000) + atan($L)",
    "sinh($L / 100) + cosh($L / 100) + tanh($L)",
    "asinh($L) + acosh($L + 1) + atanh($L / 1000)",
    "deg($L) + rad($L)",
    "$L atan2 on (namespace, consumergroup, topic, partition) ($L + 1)",
    "pi() * 2",
    "abs(-$L) + ceil($L / 3) + floor($L / 3) + round($L / 3) + round($L, 5)",
    "exp($L / 100) + ln($L + 1) + log2($L + 1) + log10($L + 1) + sqrt($L)",
    "sgn($L - 10)",
    "clamp($L, 5, 15)",
    "clamp_min($L, 10)",
    "clamp_max($L, 10)",
    "timestamp($M)",
    "timestamp($M @ 1700002000)",
    "minute(timestamp($M)) + hour() + day_of_week() + day_of_month() + days_in_month() + month() + year() + day_of_year()",
    "time() - timestamp($L)",
    "vector(1) + vector(time())",
    "scalar(sum($L))",
    "sort(sum by (service_name) (rate($C[5m])))",
    "sort_desc(sum by (service_name) (rate($C[5m])))",
    'label_join($L, "x", "-", "consumergroup", "topic")',
    'label_replace($L, "p", "part-$1", "partition", "(.*)")',
    "absent($L)",
    'absent(nonexistent{a="b"})',
    "absent_over_time($L[5m])",
    "absent_over_time(nonexistent[5m])",
    "present_over_time($L[5m])",
    "last_over_time($L[5m])",
    "count_over_time($L[5m])",
    "stddev_over_time($L[5m])",
    "stdvar_over_time($L[5m])",
    "quantile_over_time(0.5, $L[5m])",
    "changes($L[5m])",
    "resets($L[5m])",
    "idelta($L[5m])",
    "irate($C[5m])",
    "increase($C[5m])",
    "delta($M[10m])",
    "predict_linear($M[10m], 600)",
    "$L > bool 10",
    "$L == 10",
    "$L != 10",
    "$L >= 10",
    "$L < 10",
    "$L <= 10",
    "10 < $L",
    "10 - $L",
    "2 ^ ($L / 10)",
    "$L % 7",
    "-$L",
    "$L / 0",
    "0 / 0",
    "1 / 0 > bool 1",
    "sum($L) / count($L)",
    "histogram_quantile(0.5, rate(traces_span_metrics_duration_milliseconds_bucket[5m]))",
    "histogram_quantile(0.99, sum by (le) (rate(traces_span_metrics_duration_milliseconds_bucket[5m])))",
    "histogram_quantile(1, sum by (le) (rate(traces_span_metrics_duration_milliseconds_bucket[5m])))",
    "histogram_quantile(0, sum by (le) (rate(traces_span_metrics_duration_milliseconds_bucket[5m])))",
    "histogram_quantile(1.5, sum by (le) (rate(traces_span_metrics_duration_milliseconds_bucket[5m])))",
    "count by (phase) (kube_pod_status_phase == 1)",
    "sum by (namespace) (kube_pod_container_status_restarts_total)",
    "max(kube_pod_container_status_restarts_total) by (pod)",
    "$L @ start()",
    "$L @ end()",
    'rate($C{service_name="ad"}[5m] @ end())',
    "sum_over_time($L[10m:30s] @ start())",
    "$L offset 5m @ 1700002000",
    "$L @ 1700002000 offset -5m",
    "timestamp($L @ start())",
    "max_over_time($L[3m:15s] offset 2m)",
    "sum(rate($C[2m:15s]))",
    "avg_over_time(max by (consumergroup) ($L)[7m:45s])",
    'rate($C{service_name="quote"}[90s])',
    'irate($C{service_name="quote"}[45s])',
    "sum by (service_name) ($C) - sum by (service_name) ($C offset 1m)",
    "sum by (service_name) (rate($C[5m])) * on (service_name) group_right sum by (service_name, span_name) (rate($C[5m]))",
    "sum by (service_name, span_name) (rate($C[5m])) / on (service_name) group_left sum by (service_name) (rate($C[5m]))",
    "sum by (service_name, span_name) (rate($C[5m])) / ignoring (span_name) group_left sum by (service_name) (rate($C[5m]))",
    "$M / on (pod) group_left (node) container_spec_memory_limit_bytes",
    "kube_pod_status_phase * on (pod) group_left kube_pod_container_status_restarts_total",
    "$L > on (consumergroup, topic, partition, namespace) group_left sum by (namespace) ($L) / 10",
    "count(count by (service_name) ($C))",
    "sum(sum by (service_name) (rate($C[5m])) > bool 10)",
    "quantile(0.5, $L) + quantile(0, $L) + quantile(1, $L)",
    "quantile(-1, $L)",
    "quantile(2, $L)",
    "topk(1, $L)",
    "bottomk(2, $L)",
    "topk(100, $L)",
    "topk(0, $L)",
    "sum without (partition) ($L)",
    "sum by () ($L)",
    "avg without () ($L)",
    "stddev by (consumergroup) ($L)",
    'count_values("value", round($L / 10))',
    "sort_desc(topk(3, rate($C[5m])))",
    "-sum($L) ^ 2",
    "2 * 3 + 4 ^ 2 / 8 % 3",
    "(1 > bool 0) + (0 == bool 0)",
    "-(-$L)",
    "vector(scalar(count($L)))",
    "scalar($L)",
    "absent(sum(nonexistent))",
    'sum(absent(nonexistent{job="x"}))',
    'label_replace(up, "foo", "$1-$2", "instance", "(.*):(.*)")',
    'label_replace(up, "instance", "", "instance", ".*")',
    'changes(kube_pod_status_phase{phase="Pending"}[1h])',
    "resets(kube_pod_container_status_restarts_total[1h])",
    'max_over_time(kube_pod_status_phase{phase="Pending"}[1h])',
    'avg_over_time(rate($C{service_name="email"}[1m])[10m:1m])',
    "predict_linear($L[15m:1m], 300)",
    "deriv($L[10m])",
]
EDGE_CORPUS: list[CorpusQuery] = [
    CorpusQuery(
        f"edge{i:03d}",
        e.replace("$C", CALLS)
        .replace("$M", "container_memory_working_set_bytes")
        .replace("$L", "kafka_consumergroup_lag"),
    )
    for i, e in enumerate(_EDGE)
]
