"""Developer tooling of a checkout, not shipped in the wheel: conformance runners, synthetic test
data, a real Prometheus for comparisons. Tests and ``benchmarks/`` import it; ``itbench_agents``
never does (import-linter)."""
