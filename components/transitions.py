"""The one transition record that flows from builders to the store, samplers and losses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

FIELDS = ("obs", "action", "reward", "sparse_reward", "next_obs", "terminated", "truncated")


@dataclass(frozen=True)
class Transitions:
    """Named fields of a batch of transitions; leading dims are shared, e.g. [T, B, ...].

    obs/next_obs [..., F]; action [..., A]; reward, sparse_reward, terminated, truncated [...].
    Works with numpy arrays or torch tensors alike (terminated/truncated are float 0/1 in
    tensors used for training, bool in stored arrays).
    """

    obs: Any
    action: Any
    reward: Any
    sparse_reward: Any
    next_obs: Any
    terminated: Any
    truncated: Any

    def map(self, fn: Callable[[Any], Any]) -> Transitions:
        """Apply `fn` to every field."""
        return Transitions(**{f.name: fn(getattr(self, f.name)) for f in fields(self)})

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}

    def with_reward(self, reward: Any) -> Transitions:
        return replace(self, reward=reward)


@dataclass(frozen=True)
class Packing:
    """Every field of [..., N, ·] tensors side by side in one [..., N, W] tensor, so that a
    batch of transitions is gathered by one indexing op (seven gathers of a few floats each
    cost about seven times one). `widths[f]` is f's last dimension, 0 for a per-transition
    scalar (reward, flags)."""

    widths: dict[str, int]

    @property
    def width(self) -> int:
        """W: the packed tensor's last dimension (a scalar field takes one column)."""
        return sum(max(w, 1) for w in self.widths.values())

    @classmethod
    def of(cls, t: Transitions, scalar_ndim: int) -> Packing:
        """The layout of `t`, whose scalar fields have `scalar_ndim` dimensions."""
        fields = t.as_dict().items()
        return cls({f: (0 if x.ndim == scalar_ndim else x.shape[-1]) for f, x in fields})

    def pack(self, t: Transitions, rows=None):
        """One float32 torch tensor [..., W] holding `t`'s fields (numpy or torch), or only
        their `rows` (an index into the first dimension); filled field by field, so that no
        more than one field is ever copied twice."""
        import torch

        name, width = next(iter(self.widths.items()))
        first = torch.as_tensor(getattr(t, name))
        lead = first.shape[:-1] if width else first.shape
        if rows is not None:
            lead = (len(rows), *lead[1:])
        out = torch.empty(*lead, self.width, dtype=torch.float32)
        for name, view in self.unpack(out, contiguous=False).as_dict().items():
            x = torch.as_tensor(getattr(t, name))
            view.copy_(x if rows is None else x[rows])
        return out

    def unpack(self, packed, *, contiguous: bool) -> Transitions:
        """`packed`'s fields: views into it, or contiguous copies (the layout the losses have
        always been given, so their numbers do not depend on the packing)."""
        out, start = {}, 0
        for name, width in self.widths.items():
            x = packed[..., start : start + width] if width else packed[..., start]
            out[name] = x.contiguous() if contiguous else x
            start += max(width, 1)
        return Transitions(**out)
