"""The launch-latency benchmark suite behind `python -m launcher bench` (shipped in the wheel).

Nothing here is imported by `import launcher`. The modules split as follows:

- `rounds`   interleaved rounds: every path once per round, alternating order (pure Python)
- `stats`    medians, quantiles and per-round ratios (pure Python)
- `results`  reads the pytest-benchmark JSON the suite writes, and computes every ratio and goal
- `report`   the Markdown report and the chart
- `compare`  two runs side by side, with the ±10 % stability check
- `cli`      the `bench` command: checks that something can be measured, runs the suite, reports
- `suite`    the pytest-benchmark tests themselves (GPU, torch, Triton); run by path with pytest
- `names`    the kernel, path and group names the JSON and the report share
- `cases`    the hot kernels and how each path calls them (torch-free)
- `features` how the suite finds features still to come (prepare, fast dispatch, bundles)
- `env`      the versions, driver and GPU recorded with every result
- `kernels`, `startup_kernels`, `startup_child`: the kernels and the fresh-process startup probe
"""
