"""Meta-testing and analyses (kind `evaluator`): how a trained learner is scored."""
