"""The ``analysis`` tool: run a short pandas program over the billing data in the work folder
(``data.csv``, ITBench-Lite's layout) and see what it prints — the data-analysis tool of cost
anomaly tasks.

The program runs in a separate Python process, in a sandbox when bubblewrap works
(``itbench_agents/sandbox.py``: no network, a read-only view of the system and of the interpreter, a copy of
the CSV as its only file, nothing of the harness or the scenario library), with a wall-clock limit
(:data:`TIMEOUT_S`) and a memory limit (:data:`MEMORY_BYTES`). It gets ``df`` (the CSV, ``Account
ID`` as text), ``pd`` and ``np``; the value of a last bare expression is printed as a notebook
would. A CSV pandas cannot parse, a syntax error or an exception comes back as the observation.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .context import ToolContext
from .spec import ToolError, tool

TIMEOUT_S = 30.0
MEMORY_BYTES = 2 * 2**30
MAX_OUTPUT = 8000
DATA = "data.csv"

RUNNER = r"""
import ast, sys, traceback
import numpy as np
import pandas as pd
pd.set_option("display.width", 200)
pd.set_option("display.max_columns", 20)
pd.set_option("display.max_rows", 60)
code = sys.stdin.read()
try:
    df = pd.read_csv(sys.argv[1], dtype={"Account ID": str}, keep_default_na=False)
except Exception as e:
    print(f"cannot parse {sys.argv[1]}: {type(e).__name__}: {e}")
    sys.exit(3)
ns = {"df": df, "pd": pd, "np": np}
try:
    tree = ast.parse(code, "<analysis>", "exec")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<analysis>", "exec"), ns)
    if last is not None:
        v = eval(compile(ast.Expression(last.value), "<analysis>", "eval"), ns)
        if isinstance(v, (pd.DataFrame, pd.Series)):
            print(v.to_string(max_rows=60))
        elif v is not None:
            print(v)
except Exception:
    lines = [x for x in traceback.format_exc().strip().splitlines() if 'File "<string>"' not in x]
    print("\n".join(lines[-3:]))
    sys.exit(1)
"""


def _limit_memory() -> None:  # runs in the child before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def _interpreter_dirs() -> list[str]:
    """What the sandbox must show of this interpreter: its environment and its base installation."""
    out = []
    for d in {sys.prefix, sys.base_prefix, str(Path(sys.executable).resolve().parent.parent)}:
        if d and Path(d).is_dir() and not d.startswith(("/usr", "/bin", "/lib", "/etc")):
            out.append(d)
    return sorted(out)


def run_analysis(code: str, csv: Path, timeout_s: float = TIMEOUT_S) -> tuple[str, bool]:
    """Run ``code`` over ``csv``; (what it printed, whether it ran in the sandbox)."""
    from ..sandbox import bwrap_argv, bwrap_works, scrubbed_env

    with tempfile.TemporaryDirectory(prefix="itbench-analysis-") as tmp:
        work = Path(tmp)
        shutil.copyfile(csv, work / DATA)
        argv = [sys.executable, "-I", "-c", RUNNER, DATA]
        env = scrubbed_env({}, work)
        sandboxed = bwrap_works()
        if sandboxed:
            argv = bwrap_argv(argv, workdir=work, env=env, binds=_interpreter_dirs())
            argv.insert(1, "--unshare-net")
        try:
            r = subprocess.run(
                argv,
                input=code,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                cwd=work,
                env=env if not sandboxed else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                preexec_fn=_limit_memory,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ToolError(f"the analysis ran past {timeout_s:.0f} s and was stopped") from None
    out = (r.stdout + (r.stderr if r.returncode not in (0, 1, 3) else "")).strip()
    if r.returncode == 3:
        raise ToolError(out or "the CSV cannot be parsed")
    if r.returncode == 1:
        raise ToolError(out or "the program failed")
    if r.returncode != 0:
        raise ToolError(f"the analysis process ended with code {r.returncode}: {out[-500:]}")
    if len(out) > MAX_OUTPUT:
        out = out[:MAX_OUTPUT] + f"\n... ({len(out) - MAX_OUTPUT} more characters: print less)"
    return out or "(the program printed nothing)", sandboxed


@tool(kind="read")
def analysis(ctx: ToolContext, code: str) -> str:
    """Run a short pandas program over the billing data (data.csv in your work folder) and see what
    it prints. `df` is the data (one row per day and resource: date, Account ID, CSP, Cloud_Service,
    Application, Instance_Family, Price ($/hr), Num_Instances, unblended_cost), `pd` and `np` are
    imported; the value of a last bare expression is printed. No network, no other files, 30 s.

    Args:
        code: Python using df, e.g. df.groupby(["date", "Application"])["unblended_cost"].sum().unstack().tail(10)
    """
    if not ctx.workdir or not (Path(ctx.workdir) / DATA).is_file():
        raise ToolError(f"no {DATA} in the work folder: this tool is for cost anomaly tasks")
    out, _ = run_analysis(code, Path(ctx.workdir) / DATA)
    return out
