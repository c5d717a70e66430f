"""Importing this module registers every analysis of a trained run (kind `evaluator`)."""

import components.evaluation.attention_weights
import components.evaluation.context_grid
import components.evaluation.distribution_shift
import components.evaluation.embedding_variance
import components.evaluation.ood_context
import components.evaluation.task_vectors
import components.evaluation.tsne  # noqa: F401

NAMES = (
    "embedding_variance",
    "task_vectors",
    "attention_auc",
    "tsne",
    "distribution_shift",
    "ood_context",
    "context_grid",
)
