"""The successors' claim as reports look it up."""

from components.reports.successors import claimed_ood_order, nothing_to_lose, unicorn_drop


def test_claimed_only_where_another_policys_context_can_carry_the_task():
    assert claimed_ood_order("point_robot_wind", "corro") == (
        True,
        "smaller (the successors' claim)",
    )
    # another goal's expert never reaches the test goal: no reward in its context, no claim
    assert claimed_ood_order("sparse_point_robot", "csro") == (None, "-")
    # FOCAL++ is no successor; FOCAL is the row they are set against
    assert claimed_ood_order("walker_params", "focalpp") == (None, "-")


def test_unicorns_table2_is_quoted_with_its_own_order():
    # Walker-Param: UNICORN-SS 419 / 407, FOCAL 308 / 286, CSRO 310 / 279
    assert unicorn_drop("walker_params", "unicorn") == 12.0
    assert claimed_ood_order("walker_params", "unicorn") == (
        True,
        "smaller (UNICORN Table 2: 12 < 22)",
    )
    # its own table puts CSRO's drop above FOCAL's: the claim stays, the numbers say so
    assert claimed_ood_order("walker_params", "csro")[1] == "smaller (UNICORN Table 2: 31 > 22)"
    assert unicorn_drop("point_robot_wind", "unicorn") is None


def test_a_row_that_never_read_its_context_has_nothing_to_lose():
    # Sparse-Cheetah-Vel, long-build data (dense): CORRO's own-data returns lie below FOCAL's
    # with another task's expert context, so CORRO's near-zero drop is no robustness
    assert nothing_to_lose([-337.2, -383.7, -395.1], [-330.4, -319.6, -301.0])
    # CSRO on the same family reads its context (its own data above FOCAL's out-of-distribution)
    assert not nothing_to_lose([-187.5, -147.9, -164.4], [-330.4, -319.6, -301.0])
