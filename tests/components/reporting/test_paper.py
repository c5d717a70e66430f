"""The paper's numbers as reports look them up."""

from components.reporting.paper import TABLE1, TABLE3


def test_table3_keys_hold_each_column_of_the_paper():
    # Sparse-Point-Robot trained on expert, tested with random contexts: FOCAL 4.43, FOCAL++ 10.17
    assert TABLE3[("sparse_point_robot", "focal", "expert", "random")] == 4.43
    assert TABLE3[("sparse_point_robot", "focalpp", "expert", "random")] == 10.17
    # the appendix's Walker rows; the trained-on quality's own context is the undrifted return
    assert (
        TABLE3[("walker_params", "focalpp", "mixed", "mixed")]
        == TABLE1[("walker_params", "focalpp")][0]
    )
    assert len(TABLE3) == 2 * 12
