"""The paper's numbers as reports look them up."""

from components.reports.paper import TABLE1, TABLE3


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


def test_order_claims_read_the_paper_per_column():
    from components.reports.paper import claimed_return_order, claimed_variance_order

    assert claimed_return_order("sparse_point_robot", "focalpp", "focal") == (True, "12.96 > 11.84")
    # on Point-Robot-Wind the paper's contrastive row lies below FOCAL, whatever its text says
    assert claimed_return_order("point_robot_wind", "focalpp_contrastive", "focal") == (
        False,
        "-5.78 < -5.61",
    )
    assert claimed_return_order("walker_params", "focal", "mbml") == (True, "above (Figure 3)")
    relabeled = "sparse_point_robot_relabeled"
    assert claimed_return_order(relabeled, "focalpp_batchwise", "focal")[0] is True
    assert claimed_return_order(relabeled, "focal", "focalpp_batchwise") == (None, "-")
    # Figure 4b is at the relabeled data's own radius; other radii carry no claim
    assert claimed_return_order(relabeled, "focalpp_batchwise", "focal", -0.5)[0] is True
    assert claimed_return_order(relabeled, "focalpp_batchwise", "focal", -0.15) == (None, "-")
    # Table 2: lower variance is the claim; Figure 4d: less only above a sparsity of 0.6
    assert claimed_variance_order("sparse_point_robot", "focalpp", "focal", None)[0] is True
    assert claimed_variance_order(relabeled, "focalpp_batchwise", "focal", 0.79)[0] is True
    assert claimed_variance_order(relabeled, "focalpp_batchwise", "focal", 0.3)[0] is False
    assert claimed_variance_order(relabeled, "focalpp_batchwise", "focal", 0.598)[0] is None


def test_drop_claims_read_table3():
    from components.reports.paper import claimed_drop_order

    # expert-trained, medium contexts: FOCAL++ loses 12.60 - 12.47, FOCAL 8.16 - 7.12
    assert claimed_drop_order("sparse_point_robot", "expert", "medium") == (True, "0.13 < 1.04")
    # medium-trained, random contexts: the paper's FOCAL++ loses more (2.05 against 1.68)
    assert claimed_drop_order("sparse_point_robot", "medium", "random")[0] is False
    assert claimed_drop_order("sparse_point_robot", "expert", "mixed") == (None, "-")
