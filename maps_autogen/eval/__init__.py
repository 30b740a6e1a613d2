"""`maps eval`: whole benchmarks through the engine, scored by the official-conformant scorers.

The runner, the baselines, the row checks, the results log and summary, Table 1 of a run and
`maps merge`. The benchmarks themselves (tasks, row loading, scorers) are in `benchmarks/`,
below this package: nothing there imports from here.
"""
