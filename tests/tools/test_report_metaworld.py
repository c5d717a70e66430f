"""The Meta-World report section's tables, on hand-made run records: normalised score and success
beside the published numbers, the place between the reference rows, and the orders."""

from __future__ import annotations

from components.reports.runs import groups
from components.reports.sections.metaworld_scores import MetaWorld
from components.reports.tables import RunGroups


def record(recipe: str, env: str, seed: int, score: float, success: float = 0.5) -> dict:
    return {
        "recipe": f"recipes/{recipe}.gin",
        "env": env,
        "scale": "cpu",
        "seed": seed,
        "eval": {"test_return_mean": 100 * score, "normalised_score": score,
                 "success_rate": success},
    }  # fmt: skip


def grouped(scores: dict[tuple[str, str], list[float]]) -> dict:
    runs = [
        record(recipe, env, seed, value)
        for (env, recipe), values in scores.items()
        for seed, value in enumerate(values)
    ]
    return groups(runs)


def test_metaworld_table_places_a_row_between_floor_and_ceiling():
    table = MetaWorld().scores(
        RunGroups(
            grouped({
                ("ml1_push", "focal"): [0.4, 0.6],
                ("ml1_push", "reference_no_context"): [0.2, 0.2],
                ("ml1_push", "reference_oracle"): [1.2, 1.2],
            }),
            reps=200,
        )
    )  # fmt: skip
    rows = {row[3]: row for row in table.rows}
    assert rows["focal"][5] == "0.500 ± 0.100" and rows["focal"][8] == "0.30"  # (0.5-0.2)/1.0
    assert rows["focal"][9] == "0.34 ± 0.14" and rows["focal"][1] == "hidden goal"
    assert rows["reference_oracle"][8] == "-"
    assert rows["focal"][10] == "-"  # ml1_push's data are not the published ones
    assert rows["focal"][11] == "-"  # no metrics log: no meta-tests to average


def test_metaworld_table_places_a_labelled_row_between_its_own_label_s_references():
    """A study's variants (labels) each have their floor and ceiling: a labelled row is placed
    between the references of its label, never another label's or the unlabelled ones."""
    runs = [
        {**record(recipe, "ml1_push", seed, value), "label": label}
        for recipe, label, values in (
            ("focal", "brac", [0.4, 0.6]),
            ("reference_no_context", "brac", [0.2, 0.2]),
            ("reference_oracle", "brac", [1.2, 1.2]),
            ("focal", "iql", [0.5, 0.5]),
            ("reference_no_context", "", [0.0, 0.0]),
            ("reference_oracle", "", [2.0, 2.0]),
        )
        for seed, value in enumerate(values)
    ]
    table = MetaWorld().scores(RunGroups(groups(runs), reps=200))
    rows = {row[3]: row for row in table.rows}
    assert rows["focal (brac)"][8] == "0.30"  # (0.5 - 0.2) / 1.0, its own label's
    assert rows["focal (iql)"][8] == "-"  # no floor and ceiling labelled iql


def test_metaworld_table_averages_each_runs_last_three_meta_tests():
    runs = []
    for seed, history in enumerate([[0.1, 0.2, 0.3, 0.4], [0.9, 0.5]]):
        run = record("focal", "ml1_push", seed, history[-1])
        run["metrics"] = [{"kind": "train", "step": 1}] + [
            {"kind": "eval", "step": 2 * (i + 1), "normalised_score": v}
            for i, v in enumerate(history)
        ]
        runs.append(run)
    (row,) = MetaWorld().scores(RunGroups(groups(runs), reps=200)).rows
    # seed 0: (0.2 + 0.3 + 0.4) / 3 = 0.3; seed 1 has two meta-tests: 0.7
    assert row[5] == "0.450 ± 0.050" and row[11] == "0.500 ± 0.200"


def test_metaworld_table_reads_each_level_beside_the_published_one():
    """On the published recipe's families: above, within 0.10 of, or below the published mean
    (push: FOCAL 0.34, FOCAL++ 0.62; reach-wall: FOCAL 0.53)."""
    table = MetaWorld().scores(
        RunGroups(
            grouped({
                ("ml1pub_push", "focal"): [0.40, 0.42],
                ("ml1pub_push", "focalpp"): [0.90, 0.92],
                ("ml1pub_reach_wall", "focal"): [0.30, 0.32],
                ("ml1pub_reach_wall", "reference_oracle"): [1.0, 1.0],
            }),
            reps=200,
        )
    )  # fmt: skip
    rows = {(row[0], row[3]): row[10] for row in table.rows}
    assert rows[("ml1pub_push", "focal")] == "within 0.10 (+0.07)"
    assert rows[("ml1pub_push", "focalpp")] == "above by 0.29"
    assert rows[("ml1pub_reach_wall", "focal")] == "below by 0.22"
    assert rows[("ml1pub_reach_wall", "reference_oracle")] == "-"  # no published row


def test_metaworld_orders_per_task_and_over_tasks():
    table = MetaWorld().orders(
        RunGroups(
            grouped({
                ("ml1_push", "focal"): [0.3, 0.35, 0.4],
                ("ml1_push", "focalpp"): [0.6, 0.65, 0.7],
                ("ml1_sweep", "focal"): [0.5, 0.6, 0.7],
                ("ml1_sweep", "focalpp"): [0.5, 0.6, 0.7],
            }),
            reps=200,
        )
    )  # fmt: skip
    rows = {row[0]: row for row in table.rows}
    assert rows["ml1_push"][5].startswith("1.00") and rows["ml1_push"][8] == "reproduced"
    assert rows["ml1_sweep"][5].startswith("0.50") and rows["ml1_sweep"][8] == "same within noise"
    over = rows["over 2 tasks"]  # P averaged over the two tasks: (1 + 0.5) / 2
    assert over[5].startswith("0.75") and over[6].startswith("0.625")  # (0.65 + 0.6) / 2


def test_metaworld_orders_compare_within_a_variant():
    """A study's variant (the coupled forms) is compared with itself, never across."""
    runs = []
    for recipe, label, values in [
        ("focal", "", [0.3, 0.4]),
        ("focalpp", "", [0.5, 0.6]),
        ("focal", "coupled", [0.9, 1.0]),
        ("focalpp", "coupled", [0.1, 0.2]),
    ]:
        for seed, value in enumerate(values):
            runs.append({**record(recipe, "ml1_push", seed, value), "label": label})
    table = MetaWorld().orders(RunGroups(groups(runs), reps=200))
    rows = {(row[2], row[3]): row for row in table.rows}
    assert set(rows) == {("focalpp", "focal"), ("focalpp (coupled)", "focal (coupled)")}
    assert rows[("focalpp", "focal")][5].startswith("1.00")
    assert rows[("focalpp (coupled)", "focal (coupled)")][5].startswith("0.00")


def test_metaworld_orders_set_the_successors_against_the_papers_rows():
    """Each other method meets FOCAL and FOCAL++ (the paper's rows, never the reference rows),
    judged against the published order where the table has the method (CSRO on push: above
    FOCAL, 0.60 against 0.34, below FOCAL++, 0.62), else by side (UNICORN is not in it)."""
    table = MetaWorld().orders(
        RunGroups(
            grouped({
                ("ml1_push", "focal"): [0.3, 0.35, 0.4],
                ("ml1_push", "focalpp"): [0.6, 0.65, 0.7],
                ("ml1_push", "csro"): [0.5, 0.55, 0.58],
                ("ml1_push", "unicorn"): [0.8, 0.85, 0.9],
                ("ml1_push", "reference_oracle"): [0.9, 0.95, 1.0],
            }),
            reps=200,
        )
    )  # fmt: skip
    rows = {(row[2], row[3]): row for row in table.rows}
    assert set(rows) == {
        ("focalpp", "focal"),
        ("csro", "focal"),
        ("csro", "focalpp"),
        ("unicorn", "focal"),
        ("unicorn", "focalpp"),
    }
    assert rows[("csro", "focal")][8] == "reproduced"  # above FOCAL, as published
    assert rows[("csro", "focalpp")][8] == "reproduced"  # below FOCAL++, as published
    assert rows[("unicorn", "focalpp")][5].startswith("1.00")
    assert rows[("unicorn", "focalpp")][8] == "above"


def test_metaworld_orders_in_success_rate_read_the_last_meta_tests_and_judge_by_side():
    """Success rates ordered as the scores are, read over each run's last meta-tests where it
    was scored so (eval.json's `last_meta_tests`); the published table has no success rates,
    so the verdict names the side, never 'reproduced'. Here FOCAL++ scores above FOCAL and
    succeeds less: the two orders are read apart."""
    runs = []
    for recipe, scores, rates in [
        ("focal", [0.3, 0.35, 0.4], [0.9, 0.8, 0.85]),
        ("focalpp", [0.6, 0.65, 0.7], [0.2, 0.3, 0.25]),
    ]:
        for seed, (score, rate) in enumerate(zip(scores, rates, strict=True)):
            run = record(recipe, "ml1pub_push", seed, score, success=1.0)  # the final test's
            run["eval"]["last_meta_tests"] = {"normalised_score": score, "success_rate": rate}
            runs.append(run)
    section = MetaWorld()(RunGroups(groups(runs), reps=200))
    score_orders, success_orders = section.tables[1], section.tables[2]
    assert "success rate" in success_orders.title and "normalised" in score_orders.title
    ((*_, p, mine, theirs, said),) = success_orders.rows
    assert p.startswith("0.00") and said == "below"
    assert (mine, theirs) == ("0.250 ± 0.041", "0.850 ± 0.041")
    assert score_orders.rows[0][-1] == "reproduced"
    rows = {row[3]: row for row in section.tables[0].rows}
    assert rows["focalpp"][7] == "0.25 ± 0.04"  # the scores table reads the same rates


def test_figures_read_a_run_as_it_was_scored(tmp_path):
    """Runs scored over their last meta-tests (`loop.score_over`) are drawn with that score,
    named in the figure's title; runs scored on their final meta-test alone are drawn and
    named so."""
    from components.reports.report_figures import _finals, _when, iqm_figure

    runs = []
    for recipe, finals, lasts in [
        ("focal", [0.5, 0.6], [0.8, 0.9]),
        ("focalpp", [0.7, 0.7], [1.0, 0.9]),
    ]:
        for seed, (final, last) in enumerate(zip(finals, lasts, strict=True)):
            run = record(recipe, "ml1pub_push", seed, final)
            run["eval"]["last_meta_tests"] = {"count": 3, "normalised_score": last}
            runs.append(run)
    recipes = {recipe: group for (_, _, recipe), group in groups(runs).items()}
    assert _finals("ml1pub_push", recipes) == {"focal": [0.8, 0.9], "focalpp": [1.0, 0.9]}
    assert _when(recipes) == "mean of the last 3 meta-tests'"
    assert iqm_figure("ml1pub_push", "cpu", recipes, tmp_path, reps=50).is_file()
    for group in recipes.values():
        for run in group:
            del run["eval"]["last_meta_tests"]
    assert _finals("ml1pub_push", recipes) == {"focal": [0.5, 0.6], "focalpp": [0.7, 0.7]}
    assert _when(recipes) == "final"
