"""The kinds of component focalpp knows, each with the contract its members honour.

Shapes use einops letters: T tasks in a meta-batch, B transitions per task, F features,
Z latent dimensions, A action dimensions, K per-task learners. A kind's one-line contract here
is what the catalogue prints; the contract as code (a Protocol and a probe that builds a member
at tiny sizes and checks each promise) is in `components/contracts/`. A new kind is one line
here and one contract there.
"""

from __future__ import annotations

KINDS: dict[str, str] = {
    "transition_encoder": (
        "cls(sizes=, latent_dim=); forward(context [T, B, F]) -> per-transition embeddings "
        "[T, B, Z]"
    ),
    "context_encoder": (
        "cls(sizes=, latent_dim=); forward(context [T, B, F]) -> Encoded(per_transition "
        "[T, B, Z], weights [T, B], mean [T, Z] (the task vector z), losses {loss_*})"
    ),
    "attention": "cls(latent_dim=); forward(embeddings [T, B, Z]) -> weights [T, B], ≥ 0",
    "block_gate": (
        "cls(width=); forward(hidden [T, B, L, D]) -> multipliers [T, B], ≥ 0, the same "
        "for any order of the batch"
    ),
    "tokenizer": "cls(sizes=, d_model=); forward(context [T, B, F]) -> tokens [T, B, L, D]",
    "objective": "cls(); forward(TaskEmbeddings) -> {loss_*: scalar, diagnostics}",
    "metric_loss": "cls(); forward(anchor, positive, negative [T, Z]) -> {loss_*: scalar}",
    "network": "torch.nn.Module building block (MLP, policy, models) with explicit sizes",
    "divergence": (
        "cls(in_features=, act_dim=); estimate(x, data_action, policy_action) -> [...]; "
        "loss(x, data_action, policy_action) -> {loss_*: scalar}"
    ),
    "agent": (
        "cls(obs_dim=, act_dim=, latent_dim=); act(obs [T, N, F], z [T, N, Z]) -> [T, N, A]; "
        "update(Transitions [T, B, ...], z [T, Z]) -> {loss_*, diagnostics}; optimizers()"
    ),
    "behaviour_learner": (
        "cls(n_tasks=K, obs_dim=, act_dim=); act(obs [K, N, F]) -> [K, N, A]; "
        "update(Transitions [K, B, ...]) -> {loss_*, diagnostics}"
    ),
    "behaviour": "settings of the behaviour policies a dataset protocol trains (a dataclass)",
    "env": "cls(seed=): meta-environment family: its task distribution and gymnasium envs",
    "dataset": "cls(): settings() -> dict; build(family, seed=, progress=, tasks=) -> Collected",
    "sampler": "draws meta-batches [T, B, F] of named fields from tensor-resident datasets",
    "task_data": (
        "cls(run=RunContext): a run's offline tasks: family, dataset, train sampler "
        "(train), test_tasks, test_data"
    ),
    "sizes": "cls(): a step's sizes: latent_dim Z, meta_batch T, context_batch E, rl_batch B",
    "loop": (
        "cls(run=RunContext): the schedule; run(learner) trains it to the end with "
        "meta-tests, metrics and checkpoints, continuing when run.resume is set"
    ),
    "algorithm": (
        "cls(data=, loop=) (and/or run=: what it names is handed) builds its parts; "
        ".run() -> metrics dict"
    ),
    "meta_test": (
        "cls(); __call__(family=, data=, tasks=, layout=, encoder=, act=, device=, seed=) -> "
        "a result with mean, std and to_dict()"
    ),
    "test_context": (
        "cls(); reads_test_data: bool; __call__(Scene: the meta-test's rows, environment and "
        "networks) -> Returns of the scored episode per row [K·N]; raises NotApplicable with "
        "the reason where it cannot score the run"
    ),
    "analysis": (
        "cls(); __call__(trained algorithm, figures_dir) -> dict of JSON-able results; "
        "section: the report_section that tables them (or None)"
    ),
    "report_section": (
        "cls(); order (its place in report.md); __call__(RunGroups) -> Section(tables, "
        "figures), or None where the runs hold nothing it reports"
    ),
    "backend": "cls(workers=); run(jobs, ...) -> their outcomes (local process pool, Ray)",
}

# Kinds of earlier versions, and what they became: a plugin that still names one is told.
SPLIT: dict[str, tuple[str, ...]] = {
    "encoder": ("transition_encoder", "context_encoder"),
    "evaluator": ("meta_test", "analysis"),
    "rl_loss": ("divergence",),
}
