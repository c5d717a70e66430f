"""The figures of a report (`tools/report.py --out`), one per question a reader asks, each
standing alone: its title names the environment, the metric plotted and the seeds; its axes
name the metric; one colour is one method in every panel and figure (its label tells a
variant); the paper's number and the ceiling (Meta-World: the floor and ceiling rows) drawn
where they exist. The metric is the one the verdicts read (`metric`): Meta-World's normalised
score, the dense return where the paper reports dense returns, the paper-comparable return on
the sparse point robots.

- `iqm-<env>-<scale>.png`: where does each row end? The interquartile mean of its seeds' final
  score with the 95% interval (rliable's plot).
- `orders-<env>-<scale>.png`: does the paper's order between two rows hold? P(a run of the
  first row does better than a run of the second) with its 95% interval, on a fixed [0, 1] axis
  with 0.5 (no difference) marked; an interval of zero width is drawn as a mark.
- `curves-<env>-<scale>.png`: how did it get there? Learning curves as small multiples, one
  panel per comparison (the paper's rows; the coupled rows; the baselines; the successors;
  any other labelled rows), the mean over seeds with a ±std band (marks and error bars where
  the runs made three meta-tests or fewer), FOCAL (the paper's row) dashed in every other panel.

Runs come grouped by (env, scale, recipe) as `tools/report.py` groups them; a labelled run's
recipe reads `stem (label)`.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from rliable import plot_utils

from components.outputs import figures
from components.reports import metaworld
from components.reports.intervals import REPS, improvement, iqm
from components.reports.paper import PAIRS, ROWS, TABLE1, TABLE1_DENSE
from components.reports.readings import ceiling_of, comparable_key

BASELINES = ("batch_pearl", "contextual_bcq", "mbml")
SUCCESSORS = ("corro", "corro_model", "csro", "unicorn", "unicorn_sup")


def _ceiling(env: str, group: list[dict]) -> float | None:
    """The ceiling of the paper-comparable return on the group's test split."""
    return ceiling_of(group, formula_of(env, group))


def formula_of(env: str, group: list[dict]) -> str:
    """Which ceiling the paper-comparable return is measured against."""
    return (
        "dense" if env in TABLE1_DENSE or "sparse_return_mean" not in group[0]["eval"] else "paper"
    )


def stem(recipe: str) -> str:
    return recipe.split(" (")[0]


def label(recipe: str) -> str:
    return recipe.partition(" (")[2].rstrip(")")


def panel_of(recipe: str) -> str:
    """The comparison a row belongs to (one panel of the curves)."""
    name, tag = stem(recipe), label(recipe)
    if name in ROWS:
        return "the paper's rows" if not tag else f"the paper's rows, {tag}"
    if name in BASELINES:
        return "the baselines" + (f", {tag}" if tag else "")
    if name in SUCCESSORS:
        return "the successors" + (f", {tag}" if tag else "")
    return tag or "other rows"


def by_env(grouped) -> dict[tuple[str, str], dict[str, list[dict]]]:
    found: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(dict)
    for (env, scale, recipe), group in grouped.items():
        found[(env, scale)][recipe] = group
    return found


NAMES = {  # a figure's metric, with its unit
    "normalised_score": "normalised score (test return ÷ dataset return)",
    "dense_return_mean": "dense return",
    "test_return_mean": "dense return",  # a dense family's test return is its dense return
    "paper_return_mean": "paper-comparable return (1 − d inside the goal radius)",
}


def metric(env: str, group: list[dict]) -> tuple[str, str]:
    """(the eval.json / meta-test key a figure plots, its name with its unit) for a group of runs:
    the score its verdicts read — Meta-World's normalised score, else `comparable`'s."""
    if group[0]["eval"].get("normalised_score") is not None:
        key = "normalised_score"
    else:
        key = comparable_key(env, group[0])
    return key, NAMES[key]


# one colour per method, in every panel and figure; a method's variants share it
METHODS = (*ROWS, *BASELINES, *SUCCESSORS, "reference_no_context", "reference_oracle")
PALETTE = (*plt.get_cmap("tab10").colors, *plt.get_cmap("tab20").colors[1::2])


def colour(recipe: str):
    name = stem(recipe)
    return PALETTE[METHODS.index(name) % len(PALETTE)] if name in METHODS else "dimgrey"


def report_figures(grouped, out_dir: Path, reps: int = REPS) -> list[Path]:
    """Every figure of the report, per (env, scale), in the order a reader looks at them."""
    written = []
    for (env, scale), recipes in sorted(by_env(grouped).items()):
        for figure in (iqm_figure, orders_figure, curves_figure):
            path = figure(env, scale, recipes, out_dir, reps)
            if path is not None:
                written.append(path)
    return written


def _scored(run: dict, key: str) -> float | None:
    """A run's `key` as the run was scored: the mean over its last meta-tests where it was
    scored so (`loop.score_over`, the published Meta-World score), else its final one."""
    return run["eval"].get("last_meta_tests", {}).get(key, run["eval"].get(key))


def _when(recipes: dict[str, list[dict]]) -> str:
    """Which meta-tests the figure's scores are: 'final', or 'last k' where every run was
    scored over its last k."""
    counts = {
        r["eval"].get("last_meta_tests", {}).get("count") for g in recipes.values() for r in g
    }
    return (
        f"mean of the last {counts.pop()} meta-tests'"
        if len(counts) == 1 and None not in counts
        else "final"
    )


def _finals(env: str, recipes: dict[str, list[dict]]) -> dict[str, list[float]]:
    """Each row's score per seed, as its runs were scored (`_scored`; rows with fewer than two
    seeds, or a run without it, are left out: no interval)."""
    finals = {}
    for recipe, group in recipes.items():
        values = [_scored(r, metric(env, group)[0]) for r in group]
        if len(values) >= 2 and None not in values:
            finals[recipe] = values
    return finals


SMALL = {"font.size": 6.5}  # rliable sizes its text 'x-large' and up, relative to this


def _reading_order(recipes) -> list[str]:
    """Rows as a reader scans them: the paper's rows in the paper's order, then the other
    comparisons, each in its rows' order."""
    order = {name: i for i, name in enumerate(METHODS)}
    return sorted(
        recipes,
        key=lambda r: (not panel_of(r).startswith("the paper's rows"), panel_of(r),
                       order.get(stem(r), len(order)), r),
    )  # fmt: skip


def _paper_number(env: str, recipe: str, key: str) -> float | None:
    """The paper's (or the published table's) number for a row, in the figure's metric."""
    if label(recipe):
        return None
    if key == "normalised_score":
        found = metaworld.published(env, stem(recipe))
    else:
        found = TABLE1.get((env, stem(recipe)))
    return None if found is None else found[0]


def _seeds(counts) -> str:
    counts = sorted(set(counts))
    return f"{'/'.join(map(str, counts))} seed{'s' * (counts != [1])}"


def iqm_figure(env, scale, recipes, out_dir: Path, reps: int) -> Path | None:
    finals = _finals(env, recipes)
    if not finals:
        return None
    order = _reading_order(finals)
    key, name = metric(env, recipes[order[0]])
    estimates = {r: iqm(finals[r], reps=reps) for r in order}
    points = {r: np.array([e.point]) for r, e in estimates.items()}
    intervals = {r: np.array([[e.low], [e.high]]) for r, e in estimates.items()}
    bottom_up = order[::-1]  # rliable draws its first row at the bottom
    with plt.rc_context(SMALL):
        fig, axes = plot_utils.plot_interval_estimates(
            points,
            intervals,
            metric_names=[""],
            algorithms=bottom_up,
            colors={r: colour(r) for r in order},
            xlabel="",
            subfigure_width=6.5,
            row_height=0.3,
        )
        ax = np.atleast_1d(axes)[0]
        for i, recipe in enumerate(bottom_up):  # a zero-width interval still shows
            ax.plot(estimates[recipe].point, i, marker="|", color="black", markersize=7)
        ceilings = {r: _ceiling(env, recipes[r]) for r in bottom_up}
        if key != "normalised_score" and None not in ceilings.values():
            if len(set(ceilings.values())) == 1:
                ceiling = ceilings[order[0]]
                ax.axvline(ceiling, color="black", linestyle=":", linewidth=1,
                           label=f"the ceiling ({ceiling:.2f})")  # fmt: skip
            else:  # rows on other test splits or radii: each its own ceiling
                for i, recipe in enumerate(bottom_up):
                    ax.plot(ceilings[recipe], i, marker="|", color="black", markersize=9,
                            label="the row's ceiling" if i == 0 else None)  # fmt: skip
        for reference, what in ((metaworld.FLOOR, "floor"), (metaworld.CEILING, "ceiling")):
            if key == "normalised_score" and reference in finals:
                ax.axvline(estimates[reference].point, color=colour(reference), linestyle=":",
                           linewidth=1, label=f"the {what} ({reference})")  # fmt: skip
        marked = False
        for i, recipe in enumerate(bottom_up):
            paper = _paper_number(env, recipe, key)
            if paper is not None:
                said = None if marked else "the paper's number (its scale, its data)"
                ax.plot(paper, i, marker="x", color="black", markersize=6, label=said)
                marked = True
        handles, labels = ax.get_legend_handles_labels()
        keep = [(h, t) for h, t in zip(handles, labels, strict=True) if t.startswith("the ")]
        if keep:  # beside the axis, never over a row
            ax.legend([h for h, _ in keep], [t for _, t in keep], loc="center left",
                      bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=6)  # fmt: skip
        ax.set_xlabel(name)
        ax.set_title(
            f"{env} ({scale}): {_when(recipes)} {name},\nIQM over "
            f"{_seeds(len(v) for v in finals.values())}"
            " per row with its 95% interval",
            pad=12,
        )
        fig.set_size_inches(7.5, 1.2 + 0.3 * len(order))
        fig.tight_layout()
    return figures.save(fig, out_dir / f"iqm-{env}-{scale}.png")


def orders_figure(env, scale, recipes, out_dir: Path, reps: int) -> Path | None:
    """The paper's order claims (paper.PAIRS), within each label (the paper's rows against
    each other, the coupled rows against each other), in the paper's order."""
    finals = _finals(env, recipes)
    pairs = []
    for recipe in _reading_order(finals):
        for row, other in PAIRS:
            against = f"{other} ({label(recipe)})" if label(recipe) else other
            if stem(recipe) == row and against in finals:
                pairs.append((recipe, against))
    if not pairs:
        return None
    name = metric(env, recipes[pairs[0][0]])[1]
    pairs = pairs[::-1]  # rliable draws its first pair at the bottom
    points, intervals = {}, {}
    for x, y in pairs:
        p = improvement(finals[x], finals[y], reps=reps)
        points[f"{x},{y}"], intervals[f"{x},{y}"] = p.point, np.array([p.low, p.high])
    with plt.rc_context(SMALL):
        fig, ax = plt.subplots(figsize=(7.5, 1.4 + 0.28 * len(pairs)))
        plot_utils.plot_probability_of_improvement(
            points,
            intervals,
            ax=ax,
            colors=[colour(x) for x, _ in pairs],
            left_ylabel="row X",
            right_ylabel="row Y",
            xticks=[0, 0.25, 0.5, 0.75, 1],
            ylabel_x_coordinate=0.08,
        )
        for i, (low, high) in enumerate(intervals.values()):  # zero width: still a mark
            ax.plot([low, high], [i, i], color="black", linewidth=1.5, marker="|", markersize=7)
        ax.plot(list(points.values()), range(len(points)), "o", color="black", markersize=3)
        ax.axvline(0.5, color="black", linestyle="--", linewidth=0.8)
        ax.set_xlim(-0.04, 1.04)
        ax.set_xlabel(
            f"P(a run of X beats a run of Y) in {_when(recipes)} {name}; 0.5: no difference"
        )
        counts = [len(finals[x]) for x, _ in pairs] + [len(finals[y]) for _, y in pairs]
        ax.set_title(
            f"{env} ({scale}): the paper's orders (X above Y), {_seeds(counts)} per row,\n"
            "95% intervals",
            pad=14,
        )
        fig.tight_layout()
    return figures.save(fig, out_dir / f"orders-{env}-{scale}.png")


def _curve(env: str, group: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Steps, mean and std over seeds of the score at each meta-test every run of the group
    recorded (the final meta-test's own where a run's log lacks it)."""
    key = metric(env, group)[0]
    curves = [{r["step"]: r[key] for r in run.get("metrics", []) if key in r} for run in group]
    steps = sorted(set.intersection(*(set(c) for c in curves)))
    if len(steps) < 2:
        return None
    values = np.array([[c[s] for s in steps] for c in curves])
    return np.array(steps), values.mean(0), values.std(0)


def curves_figure(env, scale, recipes, out_dir: Path, reps: int) -> Path | None:
    panels: dict[str, dict[str, tuple]] = defaultdict(dict)
    for recipe, group in sorted(recipes.items()):
        curve = _curve(env, group)
        if curve is not None:
            panels[panel_of(recipe)][recipe] = curve
    if not panels:
        return None
    key, name = metric(env, next(iter(recipes.values())))
    reference = recipes.get("focal")
    reference_curve = _curve(env, reference) if reference else None
    names = sorted(panels, key=lambda p: (not p.startswith("the paper's rows"), p))
    columns = min(3, len(names))
    rows = -(-len(names) // columns)
    fig, axes = plt.subplots(
        rows,
        columns,
        figsize=(max(6.4, 4.2 * columns), 3.6 * rows + 0.4),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    for ax, panel in zip(axes.flat, names, strict=False):
        if reference_curve is not None and "focal" not in panels[panel]:
            x, mean, _ = reference_curve
            ax.plot(x, mean, color=colour("focal"), linestyle="--", linewidth=1,
                    label="focal (the paper's row)")  # fmt: skip
        ceilings = {r: _ceiling(env, recipes[r]) for r in panels[panel]}
        shared = len(set(ceilings.values())) == 1 and key != "normalised_score"
        for recipe, (x, mean, std) in panels[panel].items():
            c = colour(recipe)
            if len(x) <= 3:  # a few meta-tests: marks, not a line between them
                ax.errorbar(x, mean, yerr=std, fmt="o", color=c, capsize=3, markersize=4,
                            label=stem(recipe))  # fmt: skip
            else:
                ax.plot(x, mean, marker="o", markersize=3, color=c, label=stem(recipe))
                ax.fill_between(x, mean - std, mean + std, alpha=0.15, color=c)
            paper = _paper_number(env, recipe, key)
            if paper is not None:
                ax.plot(x[-1], paper, marker="x", color=c, markersize=6)
            if ceilings[recipe] is not None and not shared and key != "normalised_score":
                ax.axhline(ceilings[recipe], color=c, linestyle=":", linewidth=1)
        if shared and None not in ceilings.values():
            ceiling = next(iter(ceilings.values()))
            ax.axhline(ceiling, color="black", linestyle=":", linewidth=1, label="ceiling")
        ax.set_title(panel, fontsize=9)
        ax.legend(fontsize=6, loc="best")
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(names) :]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("gradient steps")
    for ax in axes[:, 0]:
        ax.set_ylabel(name if len(name) < 40 else name.split(" (")[0])
    seeds = _seeds(len(g) for r, g in recipes.items() if any(r in p for p in panels.values()))
    fig.suptitle(
        f"{env} ({scale}): meta-test {name}, mean ± std over {seeds} per row; "
        "x: the paper's number",
        fontsize=9,
    )
    fig.tight_layout()
    return figures.save(fig, out_dir / f"curves-{env}-{scale}.png")
