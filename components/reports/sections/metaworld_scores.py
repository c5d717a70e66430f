"""Meta-World ML1: normalised score and success rate per row, and FOCAL++ against FOCAL in each."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from components.reports import metaworld
from components.reports.builds import TASKS_SHARE, check_sides
from components.reports.intervals import improvement, mean, verdict
from components.reports.readings import last_meta_tests, normalised, success
from components.reports.tables import (
    RunGroups,
    Section,
    Table,
    interval,
    recipe_stem,
    seeds,
    spread,
)
from registry import register

# what the orders compare, each read from a run over its last meta-tests where it was scored so
MEASURES = {"normalised score": normalised, "success rate": success}
PAPER = ("focalpp", "focal")  # the paper's claim: its FOCAL++ row above its FOCAL row
SCORES = (
    "env",
    "goal",
    "scale",
    "recipe",
    "seeds",
    "normalised score",
    "IQM [95% CI]",
    "success rate",
    "place (floor 0, ceiling 1)",
    "published",
    "level v published",
    "last 3 meta-tests",
)
ORDERS = (
    "env",
    "scale",
    "row",
    "against",
    "seeds",
    "P(row better) [95% CI]",
    "row's score",
    "against's score",
    "verdict (against the published order)",
)


@register("report_section", "metaworld")
class MetaWorld:
    """Two tables. Scores: per row the normalised score (test return ÷ the test task's dataset
    return of the quality trained on, mean over test tasks) with its IQM interval, the success
    rate, the row's place between the floor and the ceiling of task inference (the reference
    rows: FOCAL's learner with z = 0 and with the true task; '-' where they differ by under
    0.05), the published number, where the row's level lies beside it (above, within 0.10,
    below: on the published recipe's families only, `ml1pub_<name>`; the `ml1_<name>` data are
    not the published ones, so there orders and rough levels are compared) and the mean of each
    run's last three meta-tests. Orders, in normalised score and in success rate:
    FOCAL++ against FOCAL (within each variant of a study), and every other method against the
    paper's two rows, per task and over the tasks both ran (seeds resampled within each task),
    with the verdict against the published table's order where it has both rows (the published
    table has no success rates: there the verdict says on which side the interval lies)."""

    order = 30
    titles = (
        "Meta-World ML1: normalised score and success rate, mean ± std over seeds",
        "Meta-World ML1 orders in normalised score: P(row beats against) [95% CI]",
        "Meta-World ML1 orders in success rate: P(row beats against) [95% CI]",
    )

    def __call__(self, runs: RunGroups) -> Section | None:
        tables = [self.scores(runs), *(self.orders(runs, measure) for measure in MEASURES)]
        tables = [t for t in tables if t is not None]
        return Section(tables) if tables else None

    def scores(self, runs: RunGroups) -> Table | None:
        by_env: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(dict)
        for (env, scale, recipe), group in runs.items():
            if normalised(group[0]) is not None:
                by_env[(env, scale)][recipe] = group
        rows = []
        for (env, scale), recipes in sorted(by_env.items()):
            kind = "hidden goal" if metaworld.hidden_goal(env) else "visible"
            for recipe, group in recipes.items():
                # a row is placed between the floor and the ceiling of its own label (variant)
                label = group[0].get("label") or ""
                floor, ceiling = (
                    recipes.get(f"{ref} ({label})" if label else ref)
                    for ref in (metaworld.FLOOR, metaworld.CEILING)
                )
                scores = [normalised(r) for r in group]
                last = [last_meta_tests(r, key="normalised_score") for r in group]
                rates = [success(r) for r in group]
                theirs = metaworld.published(env, recipe_stem(group[0]))
                where = "-"
                if floor and ceiling and recipe_stem(group[0]) not in metaworld.REFERENCES:
                    check_sides(
                        {recipe: group, "floor and ceiling": floor + ceiling},
                        f"{env} ({scale}): {recipe} against its floor and ceiling",
                    )
                    at = metaworld.place(
                        float(np.mean(scores)),
                        [normalised(r) for r in floor],
                        [normalised(r) for r in ceiling],
                    )
                    where = "-" if at is None else f"{at:.2f}"
                rows.append(
                    (env, kind, scale, recipe, seeds(group), spread(scores, ".3f"),
                     interval(scores, runs.reps),
                     spread(rates) if None not in rates else "-",
                     where, "-" if theirs is None else f"{theirs[0]:.2f} ± {theirs[1]:.2f}",
                     metaworld.level(float(np.mean(scores)), env, recipe_stem(group[0])),
                     spread(last, ".3f") if None not in last else "-")
                )  # fmt: skip
        return Table(self.titles[0], SCORES, rows) if rows else None

    def orders(self, runs: RunGroups, measure: str = "normalised score") -> Table | None:
        """The orders in `measure` (a key of `MEASURES`)."""
        read = MEASURES[measure]
        scores: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(dict)
        groups: dict[tuple[str, str, str], dict[str, list[dict]]] = defaultdict(dict)
        for (env, scale, _), group in runs.items():
            values = [read(r) for r in group]
            if metaworld.task_of(env) in metaworld.PUBLISHED and None not in values:
                label = group[0].get("label") or ""  # a study's variant: compared within it
                scores[(scale, label, recipe_stem(group[0]))][env] = values
                groups[(scale, label, recipe_stem(group[0]))][env] = group
        rows = []
        for scale, label in sorted({(s, lab) for s, lab, _ in scores}):
            pairs = [PAPER]
            if not label:  # the other methods against the paper's rows as the paper builds them
                others = sorted(
                    stem
                    for s, lab, stem in scores
                    if (s, lab) == (scale, label) and stem not in (*PAPER, *metaworld.REFERENCES)
                )
                pairs += [(stem, against) for stem in others for against in reversed(PAPER)]
            for stem, against in pairs:
                x = scores.get((scale, label, stem), {})
                y = scores.get((scale, label, against), {})
                _check_pair(groups, (scale, label), stem, against)
                claims = measure == "normalised score"  # the published table's measure
                rows += _order_rows(x, y, scale, (stem, against), label, runs.reps, claims)
        title = self.titles[1 + list(MEASURES).index(measure)]
        return Table(title, ORDERS, rows) if rows else None


def _check_pair(groups: dict, where: tuple[str, str], stem: str, against: str) -> None:
    """`stem` against `against` on each task both ran is one build but for the recipes, and the
    tasks averaged over differ in their data alone (components/reports/builds.py)."""
    scale, label = where
    x, y = groups.get((scale, label, stem), {}), groups.get((scale, label, against), {})
    shared = sorted(set(x) & set(y))
    named = f"{scale}{f', {label}' if label else ''}"
    for env in shared:
        check_sides({stem: x[env], against: y[env]}, f"{env} ({named}): {stem} against {against}")
    if len(shared) > 1:
        check_sides(
            {env: x[env] + y[env] for env in shared},
            f"{stem} against {against} ({named}): the tasks averaged",
            TASKS_SHARE,
        )


def _published_above(stem: str, against: str, envs: Sequence[str]) -> bool | None:
    """Whether the published table puts `stem` above `against` on these tasks (over several,
    by their mean); None where it lacks either row."""
    mine = [metaworld.published(env, stem) for env in envs]
    theirs = [metaworld.published(env, against) for env in envs]
    if None in mine or None in theirs:
        return None
    return sum(m for m, _ in mine) > sum(t for t, _ in theirs)


def _order_rows(
    x, y, scale, stems: tuple[str, str], label: str, reps: int, claims: bool = True
) -> list[tuple]:
    """`stems[0]` against `stems[1]`: one row per task both ran (two seeds or more each), and
    one over them; judged against the published order where `claims`, else by side."""

    def claimed(envs: Sequence[str]) -> bool | None:
        return _published_above(*stems, envs) if claims else None

    row, other = (f"{s} ({label})" if label else s for s in stems)
    rows = []
    shared = sorted(set(x) & set(y))
    for env in shared:
        if min(len(x[env]), len(y[env])) < 2:
            continue
        p = improvement(x[env], y[env], reps=reps)
        rows.append((env, scale, row, other, f"{len(x[env])} v {len(y[env])}", p.format(),
                     spread(x[env], ".3f"), spread(y[env], ".3f"),
                     verdict(p, claimed([env]))))  # fmt: skip
    runs = min((len(v[e]) for v in (x, y) for e in shared), default=0)  # seeds per task
    if len(shared) > 1 and runs >= 2:
        a = np.array([x[e][:runs] for e in shared]).T  # [runs, tasks]
        b = np.array([y[e][:runs] for e in shared]).T
        p = improvement(a, b, reps=reps)
        rows.append((f"over {len(shared)} tasks", scale, row, other,
                     f"{runs} v {runs} per task", p.format(),
                     mean(a, reps=reps).format(".3f"), mean(b, reps=reps).format(".3f"),
                     verdict(p, claimed(shared))))  # fmt: skip
    return rows
