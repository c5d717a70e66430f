"""The kinds of component focalpp knows, each with the contract its members honour.

Shapes use einops letters: T tasks in a meta-batch, B transitions per task, F features,
Z latent dimensions. A new kind is one new line here.
"""

from __future__ import annotations

KINDS: dict[str, str] = {
    "tokenizer": "splits transitions [T, B, F] into tokens [T, B, L, D] for sequence models",
    "encoder": "maps context transitions [T, B, F] to per-transition embeddings [T, B, Z]",
    "attention": "reweights or mixes embeddings inside one task's context batch [T, B, Z]",
    "objective": "task-representation loss: forward(named batch) -> dict of loss_* and diagnostics",
    "network": "torch.nn.Module building block (MLP, policy, critic) with explicit in/out sizes",
    "rl_loss": "actor-critic loss: forward(named batch) -> dict of loss_* and diagnostics",
    "agent": "K behaviour learners: act(obs [K, N, F]) -> [K, N, A], update(batch), or settings",
    "env": "meta-environment family: gymnasium env factory plus its task distribution",
    "dataset": "builds or loads offline per-task datasets stored as [n_tasks, N, F] arrays",
    "sampler": "draws meta-batches [T, B, F] of named fields from tensor-resident datasets",
    "algorithm": (
        "class built as cls(run=RunContext) that builds its parts; .run() -> metrics dict, "
        "continuing from run.run_dir's checkpoint when run.resume is set"
    ),
    "evaluator": "meta-test protocol or analysis: called on a trained algorithm, returns metrics",
    "backend": "executes a list of runs (local process pool, Ray); returns their outcomes",
}
