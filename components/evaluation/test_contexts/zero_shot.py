"""`zero_shot` (SPC's `zero_shot`): no context is given. Each scored episode starts from an
empty context and z = 0; after every `every` steps z is inferred again from the transitions of
this episode alone, so the action at step t uses z from steps before t. Nothing carries over
from one episode to the next, and the test tasks' offline data is never read."""

from __future__ import annotations

from collections.abc import Callable

import torch

from components.evaluation.episodes import Returns
from components.evaluation.test_contexts.scene import Scene
from registry import register
from registry.constraints import PositiveInt
from registry.validation import check_arguments


@register("test_context", "zero_shot")
class ZeroShot:
    """Adapt within the scored episode, from nothing.

    Args:
        every: steps between inferences of z (1: after every step, as SPC does).
    """

    reads_test_data = False

    def __init__(self, *, every: PositiveInt = 1):
        check_arguments("zero_shot", type(self).__init__, locals())
        self.every = every

    def __call__(self, scene: Scene) -> Returns:
        held = {"z": scene.zeros()}

        def z_at(t: int, so_far: Callable[[], torch.Tensor]) -> torch.Tensor:
            if t > 0 and t % self.every == 0:
                held["z"] = scene.infer(so_far())  # this episode's transitions 0 … t − 1
            return held["z"]

        return scene.play(z_at).returns
