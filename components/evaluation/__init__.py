"""How a trained learner is scored: the meta-test (kind `meta_test`) and the analyses of a
trained run (kind `analysis`)."""
