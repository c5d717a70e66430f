"""An analysis written outside the package, loaded with `tools/analyze.py --plugin`."""

from registry import register


@register("analysis", "step_count")
class StepCount:
    def __call__(self, trained, figures):
        return {"steps_trained": trained.step}
