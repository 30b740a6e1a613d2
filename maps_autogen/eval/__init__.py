"""`maps eval`: whole benchmarks through the engine, scored by the official-conformant scorers.

The runner, the baselines, the row checks, the results log and summary, Table 1 of a run and
`maps merge`. The benchmarks themselves (tasks, row loading, scorers) are in
`benchmarks/`, below this package: nothing there imports from here.
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._answer_cost import (answer_cost_table as answer_cost_table, answer_costs as answer_costs,
                               by_batch as by_batch)
    from ._baselines import (BaselinePrompt as BaselinePrompt, baseline_request as baseline_request,
                             load_baseline_prompts as load_baseline_prompts)
    from ._context_fit import fit_team as fit_team
    from ._estimate import shown_of as shown_of
    from ._harness import HARNESS_FILE as HARNESS_FILE, harness_results as harness_results
    from ._intervals import PairedComparison as PairedComparison
    from ._lm_eval_files import lm_eval_files as lm_eval_files, model_folder_name as model_folder_name
    from ._merge import MergeOutcome as MergeOutcome, merge_runs as merge_runs
    from ._options import (FIXED_ON_RESUME as FIXED_ON_RESUME, METHODS as METHODS, TRACKERS as TRACKERS,
                           EvalOptions as EvalOptions, MergeOptions as MergeOptions, check_request as check_request,
                           refuse_fixed_on_resume as refuse_fixed_on_resume)
    from ._results import RESULTS_FILE as RESULTS_FILE, ResultsLog as ResultsLog, latest_by_pid as latest_by_pid
    from ._runner import EvalOutcome as EvalOutcome, EvalRun as EvalRun
    from ._selection import load_items as load_items
    from ._table1 import (Cell as Cell, Row as Row, Run as Run, failed_note as failed_note, load_run as load_run,
                          table1 as table1, table1_rows as table1_rows)
    from ._table_rows import ablation_settings as ablation_settings, group_runs as group_runs
    from ._validate import validate_rows as validate_rows

__getattr__, __dir__ = lazy_exports(globals())
