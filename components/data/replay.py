"""A replay buffer holding one buffer per task as [K, capacity, ...] tensors, filled in lockstep."""

from __future__ import annotations

import torch

from components.transitions import Transitions


class TaskReplay:
    """K ring buffers written and sampled together (no loop over tasks).

    Args:
        n_tasks: K.
        capacity: transitions kept per task.
        obs_dim, act_dim: sizes of observations and actions.
        device: where the tensors live.
    """

    def __init__(self, *, n_tasks: int, capacity: int, obs_dim: int, act_dim: int, device="cpu"):
        def buf(*shape: int) -> torch.Tensor:
            return torch.zeros(n_tasks, capacity, *shape, device=device)

        self.data = Transitions(
            obs=buf(obs_dim),
            action=buf(act_dim),
            reward=buf(),
            sparse_reward=buf(),
            next_obs=buf(obs_dim),
            terminated=buf(),
            truncated=buf(),
        )
        self.n_tasks, self.capacity, self.size, self.cursor = n_tasks, capacity, 0, 0

    def add(self, step: Transitions) -> None:
        """Append one transition per task; every field has leading dim K."""
        for name, value in step.as_dict().items():
            getattr(self.data, name)[:, self.cursor] = torch.as_tensor(value, dtype=torch.float32)
        self.cursor = (self.cursor + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int) -> Transitions:
        """B transitions per task, uniformly with replacement: every field [K, B, ...]."""
        device = self.data.obs.device
        idx = torch.randint(0, self.size, (self.n_tasks, batch_size), device=device)
        rows = torch.arange(self.n_tasks, device=device)[:, None]
        return self.data.map(lambda x: x[rows, idx])

    def contents(self) -> Transitions:
        """Everything stored, oldest first: [K, size, ...]."""
        order = (
            torch.arange(self.size)
            if self.size < self.capacity
            else (torch.arange(self.capacity) + self.cursor) % self.capacity
        )
        return self.data.map(lambda x: x[:, order])

    def state(self) -> dict:
        """What is stored (oldest first) and where the ring stands: to save a stopped build."""
        return {"contents": self.contents().as_dict(), "cursor": self.cursor}

    def load_state(self, state: dict) -> None:
        """Refill from `state()`: the same contents in the same slots."""
        contents = state["contents"]
        size = contents["obs"].shape[1]
        if size > self.capacity:
            raise ValueError(f"saved replay holds {size} transitions, capacity is {self.capacity}")
        self.size, self.cursor = size, state["cursor"]
        slots = (torch.arange(size) + (self.cursor if size == self.capacity else 0)) % self.capacity
        for name, value in contents.items():
            getattr(self.data, name)[:, slots] = value

    def cut_episodes(self) -> None:
        """Mark the last stored transition of every task as the end of its episode by time
        limit (where it did not already end): the episodes are about to be restarted."""
        if self.size:
            last = (self.cursor - 1) % self.capacity
            ended = self.data.terminated[:, last].bool() | self.data.truncated[:, last].bool()
            self.data.truncated[:, last] = torch.where(ended, self.data.truncated[:, last], 1.0)
