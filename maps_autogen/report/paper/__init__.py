"""The MAPS paper's published Tables 1 and 2 (table1.csv and table2.csv beside `_tables.py`), for
`maps report --paper`."""

from ._tables import (OVERALL as OVERALL, TABLE2_BENCHMARK as TABLE2_BENCHMARK, AblationRow as AblationRow,
                      Flag as Flag, HumanMargin as HumanMargin, PaperRow as PaperRow, human_margin as human_margin,
                      paper_row_for as paper_row_for, reference_notes as reference_notes, table1_rows as table1_rows,
                      table2_checks as table2_checks, table2_rows as table2_rows)
