"""The command lines `run`, `collect` and `analyze`: argument parsing and printing over the
library calls (`components.experiment`, `components.data.collect`). `tools/<name>.py` and
`python -m components.cli.<name>` are the same command; only the benchmarks that measure a whole
command start the latter (components/benchmarks/commands.py)."""
