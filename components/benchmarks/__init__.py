"""Measurements for tools/bench.py: the machine's matmul limits, the training step, the
meta-test, memory, scaling and time to quality. Nothing here is imported by a run."""
