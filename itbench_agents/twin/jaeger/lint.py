"""Name checks for the agents' NL2Traces tool: does the service (and operation) exist in Jaeger?

Like ITBench's ``jaeger_linter``, it feeds a translated query's mistakes back to the model before the
query runs; the message lists the valid names so that a reflection step can correct itself.
"""

from __future__ import annotations

from ..telemetry.sources import TraceSource

_MAX_LISTED = 30


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_LISTED])
    return shown + (f", ... ({len(names) - _MAX_LISTED} more)" if len(names) > _MAX_LISTED else "")


def check_trace_query(source: TraceSource | None, service: str, operation: str | None = None) -> str | None:
    """``None`` when ``service`` (and ``operation``, if given) are known to ``source``, else the problem."""
    if not service or not service.strip():
        return "a service name is required to search traces"
    if source is None:
        return "traces are not available in this environment"
    services = sorted(source.services())
    if service not in services:
        close = [s for s in services if service.lower() in s.lower() or s.lower() in service.lower()]
        hint = f" Did you mean: {_listing(close)}?" if close else ""
        return f"service '{service}' not found in Jaeger. Known services: {_listing(services)}.{hint}"
    if operation:
        ops = sorted({name for name, _ in source.operations(service)})
        if operation not in ops:
            return (
                f"operation '{operation}' not found for service '{service}'. "
                f"Known operations: {_listing(ops)}."
            )
    return None
