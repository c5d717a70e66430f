"""Task-representation objectives (kind `objective`): FOCAL's distance metric, InfoNCE, matrix MoCo.

Each takes one `TaskEmbeddings` record and returns a dict whose `loss_*` entries are minimised
and whose other entries are detached diagnostics.
"""
