"""K seeds' weights in one layer, and K single modules stacked into one seed-batched module.

Inputs are seed-major in their first dimension ([K·R, ..., in], seed k's rows k·R..(k+1)·R−1).
Each layer keeps a single layer's parameter names with a leading K dimension (a linear layer's
weight is [K, out, in]), so seed k's state is the single layer's state at index k: a batched
module's state dict sliced at k is a single run's (`unstack_state`), and K single state dicts
stacked load into it (`stack_states`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

SEEDS_ATTRIBUTE = "seeds"  # every module of a stacked tree carries K here


def seed_count(module: nn.Module) -> int:
    """K of a seed-batched module (1 for a single module)."""
    return module.__dict__.get(SEEDS_ATTRIBUTE, 1)


def _rows(x: torch.Tensor, seeds: int) -> torch.Tensor:
    """x [K·R, ..., F] -> [K, R·..., F] (a view of a contiguous tensor)."""
    if x.shape[0] % seeds:
        raise ValueError(
            f"an input of {x.shape[0]} rows cannot be split among {seeds} seeds: seed-batched "
            "inputs hold every seed's rows, seed-major, in their first dimension"
        )
    return x.reshape(seeds, -1, x.shape[-1])


def unview(y: torch.Tensor, shape) -> torch.Tensor:
    """y reshaped, as a tensor of its own for autograd (as `torch.matmul` returns its result):
    an in-place op on a view (the ReLU after a linear layer) would make the backward pass copy
    the whole output."""
    return torch.ops.aten._unsafe_view(y, shape)


class SeedLinear(nn.Module):
    """K linear layers (weight [K, out, in], bias [K, out]): seed k's rows through layer k."""

    def __init__(self, seeds: int, in_features: int, out_features: int, bias: bool = True):
        super().__init__()
        self.seeds, self.in_features, self.out_features = seeds, in_features, out_features
        self.weight = nn.Parameter(torch.empty(seeds, out_features, in_features))
        self.bias = nn.Parameter(torch.empty(seeds, out_features)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.seeds == 1:  # the single layer's own kernel: its bits
            return F.linear(x, self.weight[0], None if self.bias is None else self.bias[0])
        rows = _rows(x, self.seeds)
        weight = self.weight.transpose(1, 2).contiguous()  # [K, in, out]: bmm's fast layout
        if self.bias is None:
            y = torch.bmm(rows, weight)
        else:
            y = torch.baddbmm(self.bias.unsqueeze(1), rows, weight)
        return unview(y, (*x.shape[:-1], self.out_features))


class SeedLayerNorm(nn.Module):
    """K layer norms over the last dimension (weight, bias [K, D])."""

    def __init__(self, seeds: int, normalized_shape: int, eps: float = 1e-5):
        super().__init__()
        self.seeds, self.normalized_shape, self.eps = seeds, normalized_shape, eps
        self.weight = nn.Parameter(torch.ones(seeds, normalized_shape))
        self.bias = nn.Parameter(torch.zeros(seeds, normalized_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = (self.normalized_shape,)
        if self.seeds == 1:
            return F.layer_norm(x, d, self.weight[0], self.bias[0], self.eps)
        y = F.layer_norm(_rows(x, self.seeds), d, eps=self.eps)
        y = torch.addcmul(self.bias.unsqueeze(1), y, self.weight.unsqueeze(1))
        return unview(y, x.shape)


def _seed_linear(single: nn.Linear, seeds: int) -> nn.Module:
    return SeedLinear(seeds, single.in_features, single.out_features, single.bias is not None)


def _seed_layer_norm(single: nn.LayerNorm, seeds: int) -> nn.Module:
    if len(single.normalized_shape) != 1:
        raise ValueError("only layer norms over the last dimension can be stacked")
    if not single.elementwise_affine:
        return copy.deepcopy(single)  # no parameters: it normalises each row, any seed's
    return SeedLayerNorm(seeds, single.normalized_shape[0], single.eps)


# layer class -> its seed-batched form (weights not yet set); a part's own layer registers its
# form with `seed_layer` (components/rl/batched_mlp.py does for `BatchedLinear`)
SEED_LAYERS: dict[type, Callable[[Any, int], nn.Module]] = {
    nn.Linear: _seed_linear,
    nn.LayerNorm: _seed_layer_norm,
}


def seed_layer(layer: type, form: type, make: Callable[[Any, int], nn.Module]) -> None:
    """Declare `make(single, K)`, an instance of `form`, as the seed-batched form of the layer
    class `layer` (its parameter names and shapes as the single layer's with a leading K)."""
    SEED_LAYERS[layer] = make
    SEED_FORMS.add(form)


def _batched_layer(single: nn.Module, seeds: int) -> nn.Module | None:
    """The seed-batched layer for a single one (its weights not yet set), or None."""
    make = SEED_LAYERS.get(type(single))
    return None if make is None else make(single, seeds)


SEED_FORMS: set[type] = {SeedLinear, SeedLayerNorm}  # layers already seed-batched


def stack_modules(singles: Sequence[nn.Module]) -> nn.Module:
    """One module holding K single modules' weights (seed k's = singles[k]'s), computing each
    seed's rows with its own weights where the module's forward treats its first dimension as
    independent rows. Linear layers, layer norms and `BatchedLinear`s become their seed-batched
    forms; any other parameter or buffer gains a leading K dimension (the module's own code
    must then read it per seed: the contract probes check that it does)."""
    if not singles:
        raise ValueError("stack_modules needs at least one module (one per seed)")
    k = len(singles)
    batched = copy.deepcopy(singles[0])
    names = {id(p): n for n, p in batched.named_parameters()}  # the copy's, before the swap
    for name, module in list(batched.named_modules()):
        layer = _batched_layer(module, k)
        if layer is not None:
            if name == "":
                batched = layer
            else:
                parent, _, child = name.rpartition(".")
                setattr(batched.get_submodule(parent) if parent else batched, child, layer)
    for module in batched.modules():  # parameters and buffers of other modules: [K, ...]
        if type(module) in SEED_FORMS:
            continue
        for pname, p in list(module._parameters.items()):
            if p is not None:
                module._parameters[pname] = nn.Parameter(
                    p.detach().expand(k, *p.shape).clone(), requires_grad=p.requires_grad
                )
        for bname, b in list(module._buffers.items()):
            if b is not None:
                module._buffers[bname] = b.expand(k, *b.shape).clone()
    for module in batched.modules():
        module.__dict__[SEEDS_ATTRIBUTE] = k
    batched.load_state_dict(stack_states([s.state_dict() for s in singles]))
    _rebuild_optimizers(batched, names)
    return batched


def _rebuild_optimizers(batched: nn.Module, names: dict[int, str]) -> None:
    """Optimisers a module holds (an agent's) over the stacked parameters, with the same
    settings: Adam is elementwise, so one Adam over [K, ...] tensors is K independent ones."""
    params = dict(batched.named_parameters())
    for module in batched.modules():
        for attr, value in list(vars(module).items()):
            if not isinstance(value, torch.optim.Optimizer):
                continue
            if value.state:
                raise ValueError(
                    f"{type(module).__name__}.{attr} has optimiser state: stack modules before "
                    "training, and stack checkpointed optimiser states with `stack_states`"
                )
            groups = [
                {**{h: v for h, v in g.items() if h != "params"},
                 "params": [params[names[id(p)]] for p in g["params"]]}
                for g in value.param_groups
            ]  # fmt: skip
            setattr(module, attr, type(value)(groups, **value.defaults))


def stack_states(states: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """K single state dicts -> one seed-batched state dict (every tensor stacked at dim 0)."""
    return {key: _stack([s[key] for s in states]) for key in states[0]}


def unstack_state(state: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """Seed `seed`'s single state dict from a seed-batched one."""
    return {key: _index(value, seed) for key, value in state.items()}


def _stack(values: list[Any]) -> Any:
    if isinstance(values[0], torch.Tensor):
        return torch.stack(values)
    if isinstance(values[0], Mapping):
        return {key: _stack([v[key] for v in values]) for key in values[0]}
    return values[0]


def _index(value: Any, seed: int) -> Any:
    if isinstance(value, torch.Tensor):
        return value[seed].clone()
    if isinstance(value, Mapping):
        return {key: _index(v, seed) for key, v in value.items()}
    return value


def seed_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """`F.linear(x, weight, bias)` for a single module's weight [out, in], or seed by seed for
    a stacked one [K, out, in] (x's rows seed-major): for raw parameters that a part applies
    itself (an attention layer's packed q, k, v projection)."""
    if weight.dim() == 2:
        return F.linear(x, weight, bias)
    k = weight.shape[0]
    if k == 1:
        return F.linear(x, weight[0], None if bias is None else bias[0])
    rows, w = _rows(x, k), weight.transpose(1, 2).contiguous()
    y = torch.bmm(rows, w) if bias is None else torch.baddbmm(bias.unsqueeze(1), rows, w)
    return unview(y, (*x.shape[:-1], weight.shape[1]))


def add_per_seed(x: torch.Tensor, p: torch.Tensor, single_dims: int) -> torch.Tensor:
    """x + p where p is a single module's parameter of `single_dims` dimensions (broadcast over
    x's leading ones) or a stack of K of them [K, ...] (seed k's added to seed k's rows)."""
    return _per_seed(torch.add, x, p, single_dims)


def mul_per_seed(x: torch.Tensor, p: torch.Tensor, single_dims: int) -> torch.Tensor:
    """x · p, as `add_per_seed`."""
    return _per_seed(torch.mul, x, p, single_dims)


def _per_seed(op, x: torch.Tensor, p: torch.Tensor, single_dims: int) -> torch.Tensor:
    if p.dim() == single_dims:
        return op(x, p)
    k = p.shape[0]
    seeded = x.unflatten(0, (k, -1))
    shaped = p.view(k, *[1] * (seeded.dim() - p.dim()), *p.shape[1:])
    return op(seeded, shaped).flatten(0, 1)
