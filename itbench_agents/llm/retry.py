"""Retry policy for model calls: a classifier, exponential backoff, per-model concurrency.

Retried: rate limits (429), server errors (5xx), timeouts and connection errors.
Aborted at once (the abort list): authentication / permission errors, unknown models (404),
context-window overflows and other bad requests (400) — retrying cannot fix them.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

T = TypeVar("T")

RetryKind = Literal["rate_limit", "transient", "abort"]


CONFIG_ERRORS = frozenset({"auth_error", "model_not_found"})
"""Abort reasons that say the run's model settings are wrong (key, model name): the harness records
such an episode as a harness error (unscored), never as the agent's zero."""


class LLMAbort(RuntimeError):
    """A model error that ends the episode (recorded as the termination reason)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.detail = message


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    kind: RetryKind
    reason: str
    retry_after: float | None = None


_CONTEXT = re.compile(
    r"context[_ ]length|context window|maximum context|too many tokens|prompt is too long", re.I
)


def _status(exc: BaseException) -> int | None:
    for attr in ("status_code", "status", "http_status"):
        v = getattr(exc, attr, None)
        if isinstance(v, int):
            return v
    resp = getattr(exc, "response", None)
    v = getattr(resp, "status_code", None)
    return v if isinstance(v, int) else None


def classify(exc: BaseException) -> RetryDecision:
    """Decide whether a model-call exception is worth retrying."""
    name = type(exc).__name__
    text = str(exc)
    if "ContextWindow" in name or _CONTEXT.search(text):
        return RetryDecision(False, "abort", "context_window_exceeded")
    status = _status(exc)
    if "Authentication" in name or "PermissionDenied" in name or status in (401, 403):
        return RetryDecision(False, "abort", "auth_error")
    if "NotFound" in name or status == 404:
        return RetryDecision(False, "abort", "model_not_found")
    if "RateLimit" in name or status == 429:
        after: float | None = None
        resp = getattr(exc, "response", None)
        headers = getattr(resp, "headers", None) or {}
        raw = headers.get("retry-after")
        try:
            after = float(raw) if raw else None
        except (TypeError, ValueError):
            after = None
        return RetryDecision(True, "rate_limit", "rate_limited", after)
    if status is not None and 500 <= status < 600:
        return RetryDecision(True, "transient", f"server_error_{status}")
    if any(
        k in name
        for k in ("Timeout", "APIConnection", "ServiceUnavailable", "InternalServer", "ConnectError")
    ):
        return RetryDecision(True, "transient", name)
    if "BadRequest" in name or status == 400 or "UnprocessableEntity" in name or status == 422:
        return RetryDecision(False, "abort", "bad_request")
    return RetryDecision(False, "abort", f"model_error:{name}")


def call_with_retries(
    fn: Callable[[], T],
    *,
    max_retries: int,
    base_delay: float = 1.0,
    max_delay: float = 30.0,
    on_retry: Callable[[int, RetryDecision, BaseException], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[T, int]:
    """Run ``fn`` with backoff; returns (result, retries). Raises :class:`LLMAbort`."""
    attempt = 0
    while True:
        try:
            return fn(), attempt
        except LLMAbort:
            raise
        except Exception as exc:
            d = classify(exc)
            if not d.retry or attempt >= max_retries:
                reason = d.reason if not d.retry else f"retries_exhausted:{d.reason}"
                status = _status(exc)
                text = str(exc)[:500]
                raise LLMAbort(reason, f"HTTP {status}: {text}" if status else text) from exc
            delay = d.retry_after or min(max_delay, base_delay * 2**attempt) * (0.5 + random.random() / 2)
            if on_retry:
                on_retry(attempt + 1, d, exc)
            sleep(delay)
            attempt += 1


_sem_lock = threading.Lock()
_semaphores: dict[tuple[str, str | None], threading.BoundedSemaphore] = {}


def model_semaphore(model: str, base_url: str | None, limit: int) -> threading.BoundedSemaphore:
    """One semaphore per (model, server): at most ``limit`` concurrent calls across episodes."""
    with _sem_lock:
        key = (model, base_url)
        if key not in _semaphores:
            _semaphores[key] = threading.BoundedSemaphore(max(1, limit))
        return _semaphores[key]
