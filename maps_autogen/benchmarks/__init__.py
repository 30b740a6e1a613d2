"""The benchmarks, one package each (task + scorer side by side, exported as `TASK` and `SCORER`),
and their one registry (`_registry.py`).

What they share sits beside them: `_base.py` (the scorer protocol), `_boxed.py`, `_bounds.py`,
`_latex_parse.py` and `_symbolic.py` (the scorers' shared rules); the task protocol, rows and the
hub are `maps_autogen.problem`'s. A benchmark never imports another. The layer sits right after
`problem/`: a task is data loading, a scorer rules on text; neither needs a model (docs/development.md).
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._base import Benchmark as Benchmark, RecordError as RecordError, Scorer as Scorer, Verdict as Verdict
    from ._bounds import Unjudgeable as Unjudgeable
    from ._registry import NAMES as NAMES, get_benchmark as get_benchmark
    from ._symbolic import HelperStartError as HelperStartError

__getattr__, __dir__ = lazy_exports(globals())
