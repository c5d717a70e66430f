"""Test-context protocols: how a trained agent gets the context it infers z from at meta-test
time (docs/TEST_CONTEXTS.md). Each is a registered `test_context`; the meta-test scores the ones
`meta_test.protocols` names, every one on the same rows and start states."""

import components.evaluation.test_contexts.non_prior
import components.evaluation.test_contexts.offline
import components.evaluation.test_contexts.online_greedy
import components.evaluation.test_contexts.online_posterior
import components.evaluation.test_contexts.online_prior
import components.evaluation.test_contexts.other_behaviour
import components.evaluation.test_contexts.zero_shot  # noqa: F401
from components.evaluation.test_contexts.scene import Episode, NotApplicable, Scene

__all__ = ["Episode", "NotApplicable", "Scene"]
