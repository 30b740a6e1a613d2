"""MAPS inside Inspect (`inspect eval maps_autogen/mathvista`): the benchmarks as Inspect tasks,
the MAPS team (and the direct / cot baselines) as an Inspect solver whose every model request
goes through Inspect's model API, and our official-conformant scorers as Inspect scorers.

Registered with Inspect by the `inspect_ai` entry point in pyproject.toml, which names
`maps_autogen.inspect_tasks.tasks`. Needs the `inspect` extra; nothing else in the package
imports this subpackage, so `maps` never loads Inspect.
"""
