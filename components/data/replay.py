"""A replay buffer holding one buffer per task as [K, capacity, ...] tensors, filled in lockstep."""

from __future__ import annotations

import torch

from components.transitions import FIELDS, Packing, Transitions


class TaskReplay:
    """K ring buffers written and sampled together (no loop over tasks).

    Args:
        n_tasks: K.
        capacity: transitions kept per task.
        obs_dim, act_dim: sizes of observations and actions.
        device: where the tensors live.
    """

    def __init__(self, *, n_tasks: int, capacity: int, obs_dim: int, act_dim: int, device="cpu"):
        widths = {"obs": obs_dim, "action": act_dim, "next_obs": obs_dim}
        self.packing = Packing({f: widths.get(f, 0) for f in FIELDS})
        self.packed = torch.zeros(n_tasks, capacity, self.packing.width, device=device)
        self.data = self.packing.unpack(self.packed, contiguous=False)  # named views
        self.n_tasks, self.capacity, self.size, self.cursor = n_tasks, capacity, 0, 0

    def add(self, step: Transitions) -> None:
        """Append one transition per task; every field has leading dim K."""
        self.packed[:, self.cursor] = self.packing.pack(step)
        self.cursor = (self.cursor + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int) -> Transitions:
        """B transitions per task, uniformly with replacement: every field [K, B, ...]."""
        device = self.data.obs.device
        idx = torch.randint(0, self.size, (self.n_tasks, batch_size), device=device)
        rows = torch.arange(self.n_tasks, device=device)[:, None]
        return self.packing.unpack(self.packed[rows, idx], contiguous=True)

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
