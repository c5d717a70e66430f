"""A researcher's own component, outside the package, loaded with --plugin or load_plugin."""

from registry import register


@register("transition_encoder", "lab_cube")
class LabCube:
    """Cubes its input, times a gain."""

    def __init__(self, *, gain: float = 1.0):
        self.gain = gain

    def __call__(self, x: float) -> float:
        return self.gain * x**3
