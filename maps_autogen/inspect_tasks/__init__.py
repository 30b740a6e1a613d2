"""MAPS inside Inspect (`inspect eval maps_autogen/mathvista`): the benchmarks as Inspect tasks,
the MAPS team (and the direct / cot baselines) as an Inspect solver whose every model request
goes through Inspect's model API, and our official-conformant scorers as Inspect scorers.

Registered with Inspect by the `inspect_ai` entry point in pyproject.toml, which names
`maps_autogen.inspect_tasks.tasks`. Needs the `inspect` extra; nothing else in the package
imports this subpackage, so `maps` never loads Inspect.
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._samples import benchmark_items as benchmark_items, problem_message as problem_message
    from .tasks import maps_task as maps_task

__getattr__, __dir__ = lazy_exports(globals())
