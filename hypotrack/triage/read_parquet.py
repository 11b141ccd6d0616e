"""Read a metrics table saved as Parquet: a tracker's history a user kept with pandas (`run.history()` of W&B's API,
`DataFrame.to_parquet`), a step column and a column per metric, or the long form. Read as the same table in a CSV
is (read_csv.read_rows), each cell as the text a CSV would hold.

pyarrow reads it: MLflow, a dependency, installs it; it is imported only when a Parquet file is read, so that the
other formats do not wait for it.
"""

from __future__ import annotations

from pathlib import Path

from hypotrack.errors import HypotrackError

from .read_csv import read_rows
from .runlog import RunLog

PARQUET = ".parquet"
# The column pandas writes a DataFrame's index to, where the index is not a plain range: no metric.
PANDAS_INDEX = "__index_level_"


def read_parquet(path: Path) -> list[RunLog]:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise HypotrackError(f"{path}: a Parquet table, which triage reads with pyarrow, not installed here: "
                             "pip install pyarrow, or pass the table as CSV") from None
    try:
        table = pyarrow.parquet.read_table(path)
    except (OSError, pyarrow.ArrowException) as exc:
        raise HypotrackError(f"{path}: not a readable Parquet file ({exc})") from None
    columns = [name for name in table.column_names if not name.startswith(PANDAS_INDEX)]
    if not columns or table.num_rows == 0:
        raise HypotrackError(f"{path}: a Parquet table with no rows or no columns")
    values = table.select(columns).to_pylist()
    rows = [columns] + [[_cell(row[name]) for name in columns] for row in values]
    return read_rows(path, rows, [f"read {path.name}, a Parquet table of {table.num_rows} rows, as a CSV of the same "
                                  "columns"], kind="parquet")


def _cell(value: object) -> str:
    """A value as a CSV holds it: a number in full, a missing one empty, text as it is; a list or a struct is no
    metric, and reads as none."""
    if value is None or isinstance(value, (list, dict, bytes)):
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)
