"""`maps eval`: whole benchmarks through the engine, scored by the official-conformant scorers.

The runner, the baselines, the row checks, the results log and summary, Table 1 of a run and
`maps merge`. The benchmarks themselves (tasks and scorers) are in `scoring/benchmarks/`, their
row loading in `problem/`, both layers below this one: nothing there imports from here.
"""
