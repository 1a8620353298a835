"""Tables printed whole, wherever the output goes.

Rich sizes a console that is not a terminal at 80 columns, so a piped or redirected table had
its ids cut to ``sre/acco…``. Piped, a table is printed as wide as it needs; on a terminal, at the
terminal's width, with the columns that must stay readable (``fold``) wrapped instead of cut.
"""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console
from rich.table import Table

PIPED_WIDTH = 1_000
"""The width of a console that is not a terminal: wide enough for any table of ours (a table
takes only the width it needs)."""


def table_console(file: TextIO | None = None) -> Console:
    out = file or sys.stdout
    if out.isatty():
        return Console(file=out)
    return Console(file=out, width=PIPED_WIDTH)


def print_table(table: Table, file: TextIO | None = None) -> None:
    table_console(file).print(table)
