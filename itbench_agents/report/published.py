"""The ITBench paper's published results, to set beside a run's (the notebooks, ``notebooks/``).

Source: Jha et al., "ITBench: Evaluating AI Agents across Diverse Real-World IT Automation Tasks",
arXiv:2502.05352 v1 (February 2025): Table 4 (SRE, 42 scenarios, 10 runs each, mean ± standard
error), Table 5 (CISO, 50 scenarios, 8 runs), Table 6 (FinOps, 2 scenarios). Numbers as printed; ``nan`` where the paper prints none.
Columns are :func:`~itbench_agents.report.frames.table4`'s, so that the two tables concatenate.
"""

from __future__ import annotations

import pandas as pd

NAN = float("nan")

PAPER = "ITBench v1 (arXiv:2502.05352)"

TABLE4: dict[str, dict[str, float]] = {
    "granite-3.1-8B-instruct": {
        "diagnosis_pass1_pct": 3.57,
        "diagnosis_pass1_pct_se": 0.94,
        "ntam_fl": 0.16,
        "ntam_fl_se": 0.02,
        "ntam_fpc": 0.19,
        "ntam_fpc_se": 0.02,
        "mttd_s": 259.92,
        "mttd_s_se": 65.01,
        "mitigation_pass1_pct": 0.24,
        "mitigation_pass1_pct_se": 0.25,
        "mttr_s": 845.50,
        "mttr_s_se": NAN,
    },
    "llama-3.1-8B-instruct": {
        "diagnosis_pass1_pct": 0.99,
        "diagnosis_pass1_pct_se": 0.51,
        "ntam_fl": 0.07,
        "ntam_fl_se": 0.01,
        "ntam_fpc": 0.08,
        "ntam_fpc_se": 0.01,
        "mttd_s": 57.50,
        "mttd_s_se": 2.05,
        "mitigation_pass1_pct": 1.98,
        "mitigation_pass1_pct_se": 0.68,
        "mttr_s": 245.13,
        "mttr_s_se": 40.66,
    },
    "llama-3.3-70B-instruct": {
        "diagnosis_pass1_pct": 3.10,
        "diagnosis_pass1_pct_se": 0.84,
        "ntam_fl": 0.16,
        "ntam_fl_se": 0.02,
        "ntam_fpc": 0.16,
        "ntam_fpc_se": 0.02,
        "mttd_s": 191.85,
        "mttd_s_se": 31.34,
        "mitigation_pass1_pct": 3.33,
        "mitigation_pass1_pct_se": 0.90,
        "mttr_s": 776.27,
        "mttr_s_se": 252.87,
    },
    "gpt-4o (2024-11-20)": {
        "diagnosis_pass1_pct": 13.81,
        "diagnosis_pass1_pct_se": 1.67,
        "ntam_fl": 0.39,
        "ntam_fl_se": 0.05,
        "ntam_fpc": 0.34,
        "ntam_fpc_se": 0.03,
        "mttd_s": 72.44,
        "mttd_s_se": 4.71,
        "mitigation_pass1_pct": 11.43,
        "mitigation_pass1_pct_se": 1.52,
        "mttr_s": 282.47,
        "mttr_s_se": 30.04,
    },
}

# Table 5 (CISO, 50 scenarios, 8 runs): pass@1 % per class (± standard error where printed),
# the average, and the time to pass (TTP, s)
_T5 = {
    "granite-3.1-8B": ((7.84, 3.84), (0.00, NAN), (0.00, NAN), (1.59, 1.58), (1.71, 0.76), 197.03),
    "mixtral-8x7B": ((7.35, 3.19), (1.43, 1.42), (0.00, NAN), (1.29, 4.34), (3.94, 1.03), 120.63),
    "llama-3.1-8B": ((8.57, 3.37), (0.00, NAN), (0.00, NAN), (7.46, 3.23), (3.59, 1.07), 121.49),
    "llama-3.3-70B": ((18.46, 4.94), (0.00, NAN), (1.43, 2.88), (8.06, 3.50), (9.32, 1.67), 189.61),
    "mistral-large-2": ((6.56, 3.20), (22.73, 5.32), (7.23, 2.88), (10.45, 3.77), (11.55, 1.95), 167.98),
    "llama-3.1-405B": ((16.22, 4.32), (20.83, 4.86), (8.75, 3.26), (3.17, 2.22), (12.46, 1.98), 178.89),
    "gpt-4o-mini": ((16.18, 4.54), (43.10, 6.99), (30.38, 5.43), (9.43, 4.08), (25.19, 2.80), 102.40),
    "gpt-4o": ((40.28, 5.99), (39.34, 6.55), (7.61, 2.81), (17.74, 4.92), (24.74, 2.64), 101.29),
}
TABLE5: dict[str, dict[str, float]] = {
    model: {
        **{
            f"{name}{suffix}": v
            for name, pair in zip(
                ("kyverno_pct", "k8s-opa_pct", "rhel-opa_pct", "kyverno-update_pct", "detected_pct"),
                cells[:5],
                strict=True,
            )
            for suffix, v in zip(("", "_se"), pair, strict=True)
        },
        "ttp_s": cells[5],
    }
    for model, cells in _T5.items()
}

TABLE6: dict[str, dict[str, float]] = {
    "granite-3.1-8B": {
        "diagnosis_pct": 0,
        "mitigation_pct": 0,
        "proximity_cpu_cost": 0.47,
        "proximity_ram_cost": 0.48,
        "proximity_cpu_efficiency": 0.53,
        "proximity_ram_efficiency": 0.94,
    },
    "llama-3.1-8B": {
        "diagnosis_pct": 0,
        "mitigation_pct": 0,
        "proximity_cpu_cost": 0.49,
        "proximity_ram_cost": 0.46,
        "proximity_cpu_efficiency": 0.56,
        "proximity_ram_efficiency": 0.96,
    },
    "llama-3.3-70B": {
        "diagnosis_pct": 16.6,
        "mitigation_pct": 0,
        "proximity_cpu_cost": 0.47,
        "proximity_ram_cost": 0.49,
        "proximity_cpu_efficiency": 0.53,
        "proximity_ram_efficiency": 0.96,
    },
    "gpt-4o": {
        "diagnosis_pct": 33,
        "mitigation_pct": 0,
        "proximity_cpu_cost": 0.48,
        "proximity_ram_cost": 0.51,
        "proximity_cpu_efficiency": 0.63,
        "proximity_ram_efficiency": 0.92,
    },
}


def table4() -> pd.DataFrame:
    """The paper's Table 4, indexed like :func:`~itbench_agents.report.frames.table4` (agent,
    condition), the agent being the model and the source."""
    rows = [
        {"agent": f"{model} — {PAPER}", "condition": "traces on and off", **v} for model, v in TABLE4.items()
    ]
    return pd.DataFrame(rows).set_index(["agent", "condition"])


def table5() -> pd.DataFrame:
    """The paper's Table 5 (CISO), in :func:`~itbench_agents.report.frames.table5`'s columns."""
    return pd.DataFrame([{"agent": f"{m} — {PAPER}", **v} for m, v in TABLE5.items()]).set_index("agent")


def table6() -> pd.DataFrame:
    """The paper's Table 6 (FinOps; means of the proximity metrics, pass@1 in %)."""
    return pd.DataFrame([{"agent": f"{m} — {PAPER}", **v} for m, v in TABLE6.items()]).set_index("agent")
