"""The runnable example in the docstring of one reference member per kind runs as written."""

from __future__ import annotations

import doctest
import importlib

import pytest
import torch

EXAMPLES = [
    ("components.objectives.dml", "FocalDML"),
    ("components.objectives.matrix_moco", "MatrixMoCo"),
    ("components.encoders.context", "ContextEncoder"),
    ("components.rl.brac", "BRAC"),
    ("components.evaluation.meta_test", "MetaTest"),
]


@pytest.mark.parametrize(("module", "name"), EXAMPLES, ids=[name for _, name in EXAMPLES])
def test_docstring_example_runs(module, name):
    torch.manual_seed(0)
    owner = getattr(importlib.import_module(module), name)
    tests = doctest.DocTestFinder(recurse=False).find(owner, name, globs={name: owner})
    assert tests and tests[0].examples, f"{module}.{name} has no example in its docstring"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0
