"""PromQL conformance and comparison tooling for the twin's Prometheus (``itbench_agents/twin/prometheus``)."""
