"""`maps eval`: whole benchmarks through the engine, scored by the official-conformant scorers.

One module per benchmark task (how its rows become Problems and how answers are rendered for
its official extractor), plus the shared loading, runner, baselines and results code.
"""
