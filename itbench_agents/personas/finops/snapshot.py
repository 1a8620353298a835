"""ITBench-Lite's FinOps anomaly snapshot layout (``snapshots/finops/v0.1-finops-anomaly/Scenario-N/``):
``anomaly.json`` (``{"date", "account_id"}``) and ``data.csv`` with the columns of ``billing.COLUMNS``.
``write_snapshot`` lays out a generated bill; ``load_snapshot`` reads ours or ITBench-Lite's own
folders, with errors that name the file, the line and the column."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pandas as pd

from .billing import COLUMNS, Bill

MAX_CSV_BYTES = 256 * 2**20


class SnapshotError(ValueError):
    pass


@dataclass
class Snapshot:
    folder: Path
    alert: dict[str, str]
    data: pd.DataFrame


def write_snapshot(bill: Bill, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "anomaly.json").write_text(json.dumps(bill.alert, indent=2) + "\n")
    (folder / "data.csv").write_text(bill.csv_text())
    return folder


def load_snapshot(folder: str | Path) -> Snapshot:
    root = Path(folder)
    alert_f, data_f = root / "anomaly.json", root / "data.csv"
    for f in (alert_f, data_f):
        if not f.is_file():
            raise SnapshotError(f"{f}: missing (a snapshot folder holds anomaly.json and data.csv)")
    try:
        alert = json.loads(alert_f.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SnapshotError(f"{alert_f}: not valid JSON: {e}") from None
    if not isinstance(alert, dict) or not alert.get("date") or not alert.get("account_id"):
        raise SnapshotError(f'{alert_f}: expected {{"date": "YYYY-MM-DD", "account_id": "..."}}')
    try:
        date.fromisoformat(str(alert["date"])[:10])
    except ValueError:
        raise SnapshotError(f"{alert_f}: date {alert['date']!r} is not YYYY-MM-DD") from None
    if data_f.stat().st_size > MAX_CSV_BYTES:
        raise SnapshotError(f"{data_f}: larger than {MAX_CSV_BYTES} bytes")
    return Snapshot(
        root, {"date": str(alert["date"])[:10], "account_id": str(alert["account_id"])}, read_bill(data_f)
    )


def read_bill(path: Path) -> pd.DataFrame:
    """``data.csv`` as a DataFrame (ids and names as strings, numbers checked)."""
    try:
        df = pd.read_csv(path, dtype={"Account ID": str}, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as e:
        raise SnapshotError(f"{path}: cannot parse CSV: {e}") from None
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise SnapshotError(f"{path}: missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)}")
    for col in ("Price ($/hr)", "Num_Instances", "unblended_cost"):
        num = pd.to_numeric(df[col], errors="coerce")
        bad = num.isna()
        if bad.any():
            i = int(bad.idxmax())
            raise SnapshotError(f"{path}: line {i + 2}: column {col!r}: {df[col].iloc[i]!r} is not a number")
        df[col] = num
    dates = pd.to_datetime(df["date"], errors="coerce", format="mixed")
    if dates.isna().any():
        i = int(dates.isna().idxmax())
        raise SnapshotError(f"{path}: line {i + 2}: column 'date': {df['date'].iloc[i]!r} is not a date")
    df["date"] = dates.dt.strftime("%Y-%m-%d")
    return df
