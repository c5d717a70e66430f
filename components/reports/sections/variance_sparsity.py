"""The variance-sparsity study: embedding variance against the data's sparsity ratio."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from components.reports.readings import comparable
from components.reports.tables import RunGroups, Section, Table, recipe_stem, spread
from registry import register

COLUMNS = (
    "env",
    "scale",
    "recipe",
    "label",
    "seeds",
    "sparsity ratio",
    "embedding variance",
    "paper-comparable return",
    "attention AUC",
)


@register("report_section", "variance_sparsity")
class VarianceSparsity:
    """Labelled runs, one label per sparsity level (set by a bound goal radius), with an
    embedding-variance analysis: per recipe and level the sparsity ratio, the embedding
    variance, the return and the attention AUC, mean ± std over seeds; where each recipe's
    curve of seed means crosses FOCAL's (the paper: near a sparsity ratio of 0.6); and the
    figure of variance against sparsity. Labels that vary something else (a data quality, a
    precision) are not sparsity levels. Unlabelled runs of an environment that has such levels
    are its `default` level (a record of the recipe's own radius read beside the study's)."""

    order = 120
    title = (
        "Variance-sparsity: embedding variance per sparsity level, and where each row crosses FOCAL"
    )

    def __call__(self, runs: RunGroups) -> Section | None:
        points: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(dict)
        defaults: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for (env, scale, _), group in runs.items():
            for run in group:
                found = run["analysis"].get("embedding_variance", {})
                if "sparsity" not in found:
                    continue
                if not run.get("label"):
                    defaults[(env, scale)].append(run)
                elif any("goal_radius" in b for b in run.get("bindings", [])):
                    points[(env, scale)].setdefault(recipe_stem(run), []).append(_point(run))
        for where, unlabelled in defaults.items():
            if where not in points:
                continue  # no labelled levels: these runs are no sparsity study's
            for run in unlabelled:
                points[where].setdefault(recipe_stem(run), []).append(_point(run, "default"))
        rows, pictures = [], []
        for (env, scale), recipes in sorted(points.items()):
            series = {}
            for stem, found in sorted(recipes.items()):
                levels, lines = _levels(env, scale, stem, found)
                rows += sorted(lines, key=lambda line: float(line[5]))
                series[stem] = sorted(levels)
            rows += _crossings(env, scale, series)
            if runs.out is not None and len(series) >= 1:
                from components.outputs import figures  # matplotlib only when drawing

                pictures.append(
                    figures.curves(
                        {k: np.array([p[0] for p in v]) for k, v in series.items()},
                        {k: np.array([p[1] for p in v]) for k, v in series.items()},
                        title=f"{env} ({scale}): embedding variance vs sparsity",
                        xlabel="sparsity ratio (fraction of zero-reward transitions)",
                        ylabel="embedding variance",
                        path=runs.out / f"variance-sparsity-{env}-{scale}.png",
                    )
                )
        if not rows:
            return None
        return Section([Table(self.title, COLUMNS, rows)], pictures)


def _point(run: dict, label: str | None = None) -> dict:
    """One run's sparsity, variance, return and (gated rows) attention AUC."""
    found, auc = run["analysis"]["embedding_variance"], run["analysis"].get("attention_auc", {})
    return {
        "label": label or run["label"],
        "sparsity": found["sparsity"],
        "variance": found["embedding_variance"],
        "return": comparable(run),
        "auc": auc.get("attention_auc") if auc.get("attention_gated") else None,
    }


def _levels(env: str, scale: str, stem: str, found: list[dict]):
    """Each sparsity level's (sparsity, variance, label) and its table row."""
    by_label = defaultdict(list)
    for point in found:
        by_label[point["label"]].append(point)
    levels, lines = [], []
    for label, same in by_label.items():
        column = {k: [p[k] for p in same] for k in ("sparsity", "variance", "return", "auc")}
        levels.append((np.mean(column["sparsity"]), np.mean(column["variance"]), label))
        cells = [
            spread(column[k], digits) if None not in column[k] else "-"
            for k, digits in (("variance", ".2e"), ("return", ".2f"), ("auc", ".3f"))
        ]
        lines.append((env, scale, stem, label, str(len(same)), f"{levels[-1][0]:.3f}", *cells))
    return levels, lines


def _crossings(env: str, scale: str, series: dict) -> list[tuple[str, ...]]:
    """Where each recipe's variance curve crosses FOCAL's (or the first recipe's)."""
    rows = []
    base = "focal" if "focal" in series else next(iter(series))
    for stem, levels in series.items():
        if stem == base or len(levels) < 2:
            continue
        common = {lab for *_, lab in levels} & {lab for *_, lab in series[base]}
        a = [v for s, v, lab in series[base] if lab in common]
        b = [v for s, v, lab in levels if lab in common]
        x = [s for s, v, lab in levels if lab in common]
        at = crossovers(x, a, b)
        where = ", ".join(f"{c:.2f}" for c in at) if at else "none in range"
        rows.append((env, scale, f"{stem} crosses {base}", "-", "-", where, "-", "-", "-"))
    return rows


def crossovers(x, a, b) -> list[float]:
    """Where curve b crosses curve a, both sampled at the sorted points x: the x of every sign
    change of b − a, by linear interpolation (the variance-sparsity crossover)."""
    x, d = np.asarray(x, dtype=float), np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    found = []
    for i in range(len(x) - 1):
        if d[i] == 0:
            found.append(float(x[i]))
        elif d[i] * d[i + 1] < 0:
            found.append(float(x[i] + (x[i + 1] - x[i]) * d[i] / (d[i] - d[i + 1])))
    if len(d) and d[-1] == 0:
        found.append(float(x[-1]))
    return found
