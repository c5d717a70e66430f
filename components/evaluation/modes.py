"""Evaluation switches a module to eval mode (no dropout) and back, whatever it was."""

from __future__ import annotations

from contextlib import contextmanager

from torch import nn


@contextmanager
def eval_mode(module: nn.Module):
    was_training = module.training
    module.eval()
    try:
        yield module
    finally:
        module.train(was_training)
