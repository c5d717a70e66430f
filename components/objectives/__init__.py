"""Task-representation objectives (kind `objective`): FOCAL's distance metric (`focal_dml`),
matrix-form MoCo (`matrix_moco`), transition-level InfoNCE (`infonce`), the successors' `corro`,
`club`, `transition_decoder` and `task_classifier`, and `objectives` (several added); MBML's
`triplet` is a `metric_loss`.

Each takes one `TaskEmbeddings` record and returns a dict whose `loss_*` entries are minimised
and whose other entries are detached diagnostics.
"""
