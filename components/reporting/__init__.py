"""Run directories, console output, logs, tables and plots."""
