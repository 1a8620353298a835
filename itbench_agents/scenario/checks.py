"""What a scenario validation reports: named checks, each passed or failed with its detail (every
persona's ``itbench scenarios validate`` speaks it)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class ValidationResult:
    scenario_id: str
    checks: list[Check] = field(default_factory=list)
    wall_s: float = 0.0
    twin_s: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]
