"""The ITBench paper's published results, to set beside a run's (the notebooks, ``notebooks/``).

Source: Jha et al., "ITBench: Evaluating AI Agents across Diverse Real-World IT Automation Tasks",
arXiv:2502.05352 v1 (February 2025): Table 4 (SRE, 42 scenarios, 10 runs each, mean ± standard
error), Table 6 (FinOps, 2 scenarios). Numbers as printed; ``nan`` where the paper prints none.
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


def table6() -> pd.DataFrame:
    """The paper's Table 6 (FinOps; means of the proximity metrics, pass@1 in %)."""
    return pd.DataFrame([{"agent": f"{m} — {PAPER}", **v} for m, v in TABLE6.items()]).set_index("agent")
