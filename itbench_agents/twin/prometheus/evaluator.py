"""What PromQL's functions (``functions.py``) and aggregations (``aggregations.py``) may ask of the
evaluator that calls them; ``engine.Evaluator`` is the one that does. They are typed against this,
not against the engine that dispatches to them."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..telemetry.sources import Matcher
from .values import RangeVector, Value, Vector


class Evaluator(Protocol):
    start_ms: int
    end_ms: int
    interval_ms: int
    lookback_ms: int

    def eval(self, node: Any, steps: np.ndarray) -> Value: ...

    def eval_vector(self, node: Any, steps: np.ndarray) -> Vector: ...

    def eval_scalar(self, node: Any, steps: np.ndarray) -> np.ndarray: ...

    def eval_range(self, node: Any, steps: np.ndarray) -> RangeVector: ...

    def at_ms(self, at: Any) -> int | None: ...

    def fetch(self, matchers: list[Matcher], lo_ms: int, hi_ms: int) -> list[Any]: ...

    def check(self) -> None: ...

    def check_quantiles(self, q: np.ndarray, node: Any) -> None: ...

    def warn(self, msg: str, node: Any) -> None: ...

    def info(self, msg: str, node: Any) -> None: ...
