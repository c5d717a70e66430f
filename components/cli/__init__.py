"""The command lines of the tools that a study also starts in fresh processes: `run`, `collect`
and `analyze`. `tools/<name>.py` and `python -m components.cli.<name>` are the same command;
the sweep and the benchmarks start the latter, so the library never reaches into tools/."""
