"""Reinforcement-learning parts: networks (kind `network`: `mlp`, `batched_mlp`,
`tanh_gaussian_policy`, `task_models`), the task-batched behaviour SAC, the offline agents
(kind `agent`: `brac`, `bcq`) and BRAC's divergence critic (kind `divergence`). PEARL's
probabilistic encoder is an encoder (`components/encoders/probabilistic.py`)."""
