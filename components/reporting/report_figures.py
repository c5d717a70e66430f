"""The figures of a report (`tools/report.py --out`), one per question a reader asks:

- `iqm-<env>-<scale>.png`: where does each row end? The interquartile mean of its seeds'
  final paper-comparable return with the 95% interval (rliable's own plot), the split's ceiling
  and the paper's number beside it.
- `orders-<env>-<scale>.png`: does the paper's order between two rows hold? P(a run of the
  first row does better than a run of the second) with its 95% interval, for every order the
  paper claims (rliable's probability-of-improvement plot); 0.5 is no difference.
- `curves-<env>-<scale>.png`: how did it get there? Learning curves as small multiples, one
  panel per comparison (the paper's rows; the coupled rows; the baselines; the successors;
  any other labelled rows), the mean over seeds with a ±std band, FOCAL (the paper's row) in
  grey in every other panel, and the ceiling drawn.

Runs come grouped by (env, scale, recipe) as `tools/report.py` groups them; a labelled run's
recipe reads `stem (label)`.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from rliable import plot_utils

from components.reporting import figures
from components.reporting.intervals import REPS, improvement, iqm
from components.reporting.paper import PAIRS, ROWS, TABLE1, TABLE1_DENSE

BASELINES = ("batch_pearl", "contextual_bcq", "mbml")
SUCCESSORS = ("corro", "corro_model", "csro", "unicorn", "unicorn_sup")


def comparable(run: dict) -> float | None:
    """The return the paper's Table 1 number for this run's column is compared with: the
    paper-comparable sparse return on the point robots (eval.json's `paper_return_mean`), the
    dense return where the paper reported dense returns (MuJoCo), the test return otherwise;
    None for a sparse run recorded before paper-comparable returns existed."""
    record = run["eval"]
    if run["env"] in TABLE1_DENSE:
        return record.get("dense_return_mean")
    if "sparse_return_mean" not in record:
        return record["test_return_mean"]
    return record.get("paper_return_mean")


def comparable_key(env: str, run: dict) -> str:
    """The metrics.jsonl key of `comparable` at each meta-test."""
    if env in TABLE1_DENSE:
        return "dense_return_mean"
    return "paper_return_mean" if "sparse_return_mean" in run["eval"] else "test_return_mean"


def last_meta_tests(run: dict, count: int = 3, key: str | None = None) -> float | None:
    """The mean of the run's last `count` meta-tests' `key` (default: the paper-comparable
    return; fewer if it recorded fewer): a reading less exposed than the final one to the swing
    between meta-tests. Needs the run's metrics log (`run["metrics"]`)."""
    key = key or comparable_key(run["env"], run)
    values = [r[key] for r in run.get("metrics", []) if r.get("kind") == "eval" and key in r]
    return float(np.mean(values[-count:])) if values else None


def ceiling_of(group: list[dict], formula: str) -> float | None:
    """The test split's ceiling under `formula` ('paper', 'sparse', 'dense'), if every run of
    the group recorded the same one."""
    found = [r["eval"].get("ceiling", {}).get(formula) for r in group]
    return found[0] if found and None not in found and len(set(found)) == 1 else None


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


def report_figures(grouped, out_dir: Path, reps: int = REPS) -> list[Path]:
    """Every figure of the report, per (env, scale), in the order a reader looks at them."""
    written = []
    for (env, scale), recipes in sorted(by_env(grouped).items()):
        for figure in (iqm_figure, orders_figure, curves_figure):
            path = figure(env, scale, recipes, out_dir, reps)
            if path is not None:
                written.append(path)
    return written


def _finals(recipes: dict[str, list[dict]]) -> dict[str, list[float]]:
    """Each row's final paper-comparable return per seed (rows with fewer than two seeds, or
    a run without it, are left out: no interval)."""
    finals = {}
    for recipe, group in recipes.items():
        values = [comparable(r) for r in group]
        if len(values) >= 2 and None not in values:
            finals[recipe] = values
    return finals


# one colour per comparison, so a reader sees the groups (rliable colours each row otherwise)
PANEL_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:grey")
SMALL = {"font.size": 6.5}  # rliable sizes its text 'x-large' and up, relative to this


def _reading_order(recipes) -> list[str]:
    """Rows as a reader scans them: the paper's rows in the paper's order, then the other
    comparisons, each in its rows' order."""
    order = {name: i for i, name in enumerate((*ROWS, *BASELINES, *SUCCESSORS))}
    return sorted(
        recipes,
        key=lambda r: (not panel_of(r).startswith("the paper's rows"), panel_of(r),
                       order.get(stem(r), len(order)), r),
    )  # fmt: skip


def iqm_figure(env, scale, recipes, out_dir: Path, reps: int) -> Path | None:
    finals = _finals(recipes)
    if not finals:
        return None
    order = _reading_order(finals)
    panels = list(dict.fromkeys(panel_of(r) for r in order))
    colours = {r: PANEL_COLOURS[panels.index(panel_of(r)) % len(PANEL_COLOURS)] for r in order}
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
            colors=colours,
            xlabel="",
            subfigure_width=6.5,
            row_height=0.3,
        )
        ax = np.atleast_1d(axes)[0]
        ceilings = {r: _ceiling(env, recipes[r]) for r in bottom_up}
        if len(set(ceilings.values())) == 1 and None not in ceilings.values():
            ceiling = ceilings[order[0]]
            ax.axvline(ceiling, color="black", linestyle=":", linewidth=1)
            ax.text(ceiling, len(order) - 0.4, f" ceiling {ceiling:.2f}", ha="right", va="bottom")
        else:  # rows on other test splits or radii: each its own ceiling
            for i, recipe in enumerate(bottom_up):
                if ceilings[recipe] is not None:
                    ax.plot(ceilings[recipe], i, marker="|", color="black", markersize=9,
                            label="the row's ceiling" if i == 0 else None)  # fmt: skip
        marked = False
        for i, recipe in enumerate(bottom_up):
            paper = TABLE1.get((env, stem(recipe)))
            if paper is not None and not label(recipe):
                ax.plot(paper[0], i, marker="x", color="black", markersize=6,
                        label=None if marked else "the paper's number (its scale)")  # fmt: skip
                marked = True
        # rliable labels every bar: the legend shows only the marks drawn here ("the ...")
        handles, labels = ax.get_legend_handles_labels()
        keep = [(h, t) for h, t in zip(handles, labels, strict=True) if t.startswith("the ")]
        if keep:
            ax.legend([h for h, _ in keep], [t for _, t in keep], loc="lower left", frameon=False)
        counts = sorted({len(v) for v in finals.values()})
        ax.set_title(
            f"{env} ({scale}): final paper-comparable return,\nIQM over "
            f"{'/'.join(map(str, counts))} seeds per row with its 95% interval",
            pad=12,
        )
        fig.set_size_inches(7.5, 1.0 + 0.3 * len(order))
        fig.tight_layout()
    return figures.save(fig, out_dir / f"iqm-{env}-{scale}.png")


def orders_figure(env, scale, recipes, out_dir: Path, reps: int) -> Path | None:
    """The paper's order claims (paper.PAIRS), within each label (the paper's rows against
    each other, the coupled rows against each other), in the paper's order."""
    finals = _finals(recipes)
    pairs = []
    for recipe in _reading_order(finals):
        for row, other in PAIRS:
            against = f"{other} ({label(recipe)})" if label(recipe) else other
            if stem(recipe) == row and against in finals:
                pairs.append((recipe, against))
    if not pairs:
        return None
    pairs = pairs[::-1]  # rliable draws its first pair at the bottom
    panels = list(dict.fromkeys(panel_of(x) for x, _ in pairs[::-1]))
    colours = [PANEL_COLOURS[panels.index(panel_of(x)) % len(PANEL_COLOURS)] for x, _ in pairs]
    points, intervals = {}, {}
    for x, y in pairs:
        p = improvement(finals[x], finals[y], reps=reps)
        points[f"{x},{y}"], intervals[f"{x},{y}"] = p.point, np.array([p.low, p.high])
    with plt.rc_context(SMALL):
        fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.28 * len(pairs)))
        plot_utils.plot_probability_of_improvement(
            points,
            intervals,
            ax=ax,
            colors=colours,
            left_ylabel="row X",
            right_ylabel="row Y",
            xticks=[0, 0.25, 0.5, 0.75, 1],
            ylabel_x_coordinate=0.08,
        )
        # a dot at each estimate: an interval of zero width ([1, 1], every seed above every
        # seed) draws no bar
        ax.plot(list(points.values()), range(len(points)), "o", color="black", markersize=3)
        ax.axvline(0.5, color="black", linestyle="--", linewidth=0.8)
        ax.set_title(
            f"{env} ({scale}): the paper's orders (X above Y); P(a run of X beats a run of Y) "
            "with its 95% interval; 0.5: no difference",
            pad=14,
        )
        fig.tight_layout()
    return figures.save(fig, out_dir / f"orders-{env}-{scale}.png")


def _curve(env: str, group: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Steps, mean and std over seeds of the paper-comparable return at each meta-test every
    run of the group recorded."""
    key = comparable_key(env, group[0])
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
    reference = recipes.get("focal")
    reference_curve = _curve(env, reference) if reference else None
    names = sorted(panels, key=lambda p: (not p.startswith("the paper's rows"), p))
    columns = min(3, len(names))
    rows = -(-len(names) // columns)
    fig, axes = plt.subplots(
        rows,
        columns,
        figsize=(max(6.4, 4.2 * columns), 3.6 * rows),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    for ax, name in zip(axes.flat, names, strict=False):
        if reference_curve is not None and "focal" not in panels[name]:
            x, mean, _ = reference_curve
            ax.plot(x, mean, color="grey", linestyle="--", linewidth=1, label="focal (paper's row)")
        ceilings = {r: _ceiling(env, recipes[r]) for r in panels[name]}
        shared = len(set(ceilings.values())) == 1
        for recipe, (x, mean, std) in panels[name].items():
            (line,) = ax.plot(x, mean, marker="o", markersize=3, label=stem(recipe))
            ax.fill_between(x, mean - std, mean + std, alpha=0.15, color=line.get_color())
            if ceilings[recipe] is not None and not shared:  # each row its own ceiling
                ax.axhline(ceilings[recipe], color=line.get_color(), linestyle=":", linewidth=1)
        if shared and None not in ceilings.values():
            ceiling = next(iter(ceilings.values()))
            ax.axhline(ceiling, color="black", linestyle=":", linewidth=1, label="ceiling")
        ax.set_title(name, fontsize=9)
        ax.legend(fontsize=6, loc="lower right")
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(names) :]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("gradient steps")
    for ax in axes[:, 0]:
        ax.set_ylabel("paper-comparable return")
    fig.suptitle(f"{env} ({scale}): meta-test return, mean ± std over seeds", fontsize=10)
    fig.tight_layout()
    return figures.save(fig, out_dir / f"curves-{env}-{scale}.png")
