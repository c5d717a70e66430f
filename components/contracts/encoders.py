"""Contracts of the encoder parts: transition encoders, context encoders, attention, tokenizers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import torch

from components.contracts.core import (
    Broken,
    at_any_parameters,
    build,
    carries_gradient,
    contract,
    finite_on,
    kept_as_promised,
    loss_terms,
    reaches,
    round_trip,
    snapshot,
    tensor,
)
from components.contracts.seeds import batches_like_singles
from components.encoders.encoded import Encoded
from registry import FocalppError

T, B = 3, 4  # tasks and transitions of a probe's context
SIZES = (2, 2, 2, 1)  # (s, a, s', r) of a point robot
OTHER_SIZES = (3, 1, 1)  # another family's (s, a, r): another width and another count
LATENT = 5


class TransitionEncoder(Protocol):
    def __init__(self, *, sizes: Sequence[int], latent_dim: int) -> None: ...
    def forward(self, context: torch.Tensor) -> torch.Tensor: ...  # [T, B, F] -> [T, B, Z]


class ContextEncoder(Protocol):
    def __init__(self, *, sizes: Sequence[int], latent_dim: int) -> None: ...
    def forward(self, context: torch.Tensor) -> Encoded: ...  # [T, B, F] -> Encoded


class Attention(Protocol):
    def __init__(self, *, latent_dim: int) -> None: ...
    def forward(self, embeddings: torch.Tensor) -> torch.Tensor: ...  # [T, B, Z] -> [T, B]


class BlockGate(Protocol):
    def __init__(self, *, width: int) -> None: ...
    def forward(self, hidden: torch.Tensor) -> torch.Tensor: ...  # [T, B, L, D] -> [T, B]


class Tokenizer(Protocol):
    def __init__(self, *, sizes: Sequence[int], d_model: int) -> None: ...
    def forward(self, context: torch.Tensor) -> torch.Tensor: ...  # [T, B, F] -> [T, B, L, D]


def _context(sizes: Sequence[int], seed: int = 0) -> torch.Tensor:
    return torch.randn(T, B, sum(sizes), generator=torch.Generator().manual_seed(seed))


def _seed_inputs(sizes: Sequence[int]):
    return lambda k: (_context(sizes, 10 + k),)


def _forward(module, x):
    return module(x)


def degenerate_contexts(sizes: Sequence[int]) -> dict[str, torch.Tensor]:
    """Contexts a run meets that a random one never shows (the reward is the last field)."""
    x = _context(sizes)
    zero_reward, constant = x.clone(), x.clone()
    zero_reward[..., -1] = 0.0
    constant[..., 0] = 0.5
    return {
        "a context whose rewards are all zero (sparse rewards far from the goal)": zero_reward,
        "a context where one feature is the same in every transition": constant,
        "a context of one transition repeated": x[:, :1].expand_as(x).clone(),
    }


def degenerate_embeddings(latent: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(T, 1, latent, generator=g).expand(T, B, latent).clone()
    return {
        "embeddings alike across the batch (one transition repeated)": x,
        "all-zero embeddings": torch.zeros(T, B, latent),
    }


def each_size(probe):
    """Run a probe on the given sizes, or on two sets (a component must read `sizes`, not
    assume one family's width)."""

    def run(factory, given):
        choices = [given["sizes"]] if "sizes" in given else [SIZES, OTHER_SIZES]
        for i, sizes in enumerate(choices):
            try:
                probe(factory, {**given, "sizes": tuple(sizes)})
            except (Broken, FocalppError):
                raise
            except Exception as e:
                # sizes are the cause when others worked (or when the run's own are given)
                other_sizes_worked = i > 0 or "sizes" in given
                raise Broken(
                    f"work with the transition sizes it is given (here {tuple(sizes)}, width "
                    f"{sum(sizes)})",
                    f"it raised {type(e).__name__}: {e}",
                    "build every layer from `sizes` (their sum is a transition's width)"
                    if other_sizes_worked
                    else _fix_for(e),
                ) from e

    run.__doc__ = probe.__doc__
    return run


def _fix_for(error: Exception) -> str:
    if "before Module.__init__() call" in str(error):
        return "call super().__init__() first in __init__"
    return "run the probe with --debug to see where (tools/catalog.py --check FILE.py --debug)"


def encoder_builder(factory, given):
    """The sizes an encoder probe uses and a function that builds a fresh member with them."""
    sizes, latent = tuple(given["sizes"]), given.get("latent_dim", LATENT)

    def make():
        promise = "be built as cls(sizes=, latent_dim=)"
        return build(factory, promise, sizes=sizes, latent_dim=latent)

    return sizes, latent, make


@contract("transition_encoder", TransitionEncoder)
@each_size
def probe_transition_encoder(factory, given) -> None:
    sizes, latent, make = encoder_builder(factory, given)
    encoder = make()
    kept = snapshot(encoder)
    out = encoder(_context(sizes))
    if isinstance(out, Encoded):
        raise Broken(
            "map each transition to an embedding tensor [T, B, Z]",
            "it returned a whole-context Encoded record",
            "register it as kind 'context_encoder' and select it with `focal.encoder = @...`",
        )
    what = "per-transition embeddings [T, B, Z]"
    tensor(out, (T, B, latent), what)
    carries_gradient(out, encoder, "its embeddings")
    reaches((out * torch.randn_like(out)).sum(), encoder, "the embeddings' gradient")
    kept_as_promised(encoder, kept, "the encoder")
    finite_on(encoder, degenerate_contexts(sizes), lambda m, x: m(x), what)
    round_trip(make, encoder, lambda m: m(_context(sizes)))
    batches_like_singles(make, _seed_inputs(sizes), _forward, what="embeddings")
    at_any_parameters(encoder, lambda m, when: on_its_own(m, sizes, when))


def _evaluated(module, *inputs):
    """Outputs in evaluation mode (dropout draws nothing) without a graph, each call from the
    same random state (a sampling encoder draws the same noise for the same inputs)."""
    training, state = module.training, torch.get_rng_state()
    module.eval()
    try:
        with torch.no_grad():
            outputs = []
            for x in inputs:
                torch.set_rng_state(state)
                outputs.append(module(x))
            return outputs
    finally:
        module.train(training)
        torch.set_rng_state(state)


def on_its_own(encoder, sizes: Sequence[int], when: str = "", what: str = "embedding") -> None:
    """A transition's output depends on that transition alone: the rest of its batch, and the
    other tasks, change nothing of it. What looks across the batch is a context encoder's gate,
    never a transition encoder or a tokenizer."""
    x = _context(sizes)
    others = x.clone()
    others[:, 1:] = _context(sizes, seed=1)[:, 1:]  # every transition but the first changed
    others[1:] = _context(sizes, seed=2)[1:]  # and every other task
    alone, among_others = (out[0, 0] for out in _evaluated(encoder, x, others))
    if not torch.allclose(alone, among_others, rtol=1e-4, atol=1e-5):
        raise Broken(
            f"compute each transition's {what} on its own (the rest of the batch changes "
            "nothing of it)",
            f"the first transition's {what} moved by {(alone - among_others).abs().max():.3g} "
            f"when the other transitions changed{when}",
            "pool or gate across the batch in a context encoder (kind 'context_encoder'), "
            "not per transition",
        )


def _order(seed: int = 2) -> torch.Tensor:
    return torch.randperm(B, generator=torch.Generator().manual_seed(seed))


def order_free(encoder, sizes: Sequence[int], latent: int, when: str = "") -> None:
    """A context is a set of transitions: permuting its batch leaves the task vector as it was
    and permutes the per-transition embeddings and weights alike (Theorem 3.3's E[W(c) E(c)]
    is an expectation over transitions, not a sequence)."""
    x, order = _context(sizes), _order()
    plain, permuted = _evaluated(encoder, x, x[:, order])
    tensor(permuted.mean, (T, latent), f"the task vector z [T, Z]{when}")
    moved = {
        "the task vector": (permuted.mean, plain.mean),
        "the per-transition embeddings": (permuted.per_transition, plain.per_transition[:, order]),
        "the batch weights": (permuted.weights, plain.weights[:, order]),
    }
    for name, (got, want) in moved.items():
        if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
            raise Broken(
                "encode a context as a set (permuting its batch permutes the per-transition "
                "outputs and leaves z as it was)",
                f"permuting the batch changed {name} by {(got - want).abs().max():.3g}{when}",
                "score a transition from its own content and order-free summaries of the batch "
                "(a mean, a softmax over it), never from its position",
            )


@contract("context_encoder", ContextEncoder)
@each_size
def probe_context_encoder(factory, given) -> None:
    sizes, latent, make = encoder_builder(factory, given)
    encoder = make()
    kept = snapshot(encoder)
    out = encoder(_context(sizes))
    if not isinstance(out, Encoded):
        raise Broken(
            "return an Encoded record (per_transition, weights, mean, losses)",
            f"it returned {type(out).__name__}"
            + (f" of shape {list(out.shape)}" if isinstance(out, torch.Tensor) else ""),
            "a per-transition encoder is kind 'transition_encoder': select it with "
            "`context_encoder.transition = @...`",
        )
    tensor(out.per_transition, (T, B, latent), "per-transition embeddings [T, B, Z]")
    weights = tensor(out.weights, (T, B), "batch weights [T, B]")
    if (weights < 0).any():
        raise Broken("return non-negative batch weights", "some weights are negative")
    tensor(out.mean, (T, latent), "the task vector z [T, Z]")
    if not isinstance(out.losses, Mapping):
        raise Broken("return its own loss terms as a dict", f"losses is {type(out.losses)}")
    own = loss_terms(out.losses, "its losses") if out.losses else {}
    carries_gradient(out.mean, encoder, "its task vector")
    # every output an objective or the trainer reads: a parameter used by any of them counts
    outputs = (out.mean, out.per_transition, out.weights)
    probe = sum((x * torch.randn_like(x)).sum() for x in outputs) + sum(own.values())
    reaches(probe, encoder, "the gradient of its outputs (z, per-transition, weights, losses)")
    kept_as_promised(encoder, kept, "the encoder")
    finite_on(encoder, degenerate_contexts(sizes), lambda m, x: m(x), "an Encoded record")
    round_trip(make, encoder, lambda m: m(_context(sizes)))
    batches_like_singles(make, _seed_inputs(sizes), _forward, what="Encoded record")
    at_any_parameters(encoder, lambda m, when: order_free(m, sizes, latent, when))


@contract("attention", Attention)
def probe_attention(factory, given) -> None:
    latent = given.get("latent_dim", LATENT)

    def make():
        return build(factory, "be built as cls(latent_dim=)", latent_dim=latent)

    gate = make()
    kept = snapshot(gate)
    embeddings = torch.randn(T, B, latent, generator=torch.Generator().manual_seed(1))
    weights = tensor(gate(embeddings), (T, B), "one weight per transition [T, B]")
    if (weights < 0).any():
        raise Broken("return non-negative weights", "some weights are negative")
    reaches((weights * torch.randn_like(weights)).sum(), gate, "the weights' gradient")
    kept_as_promised(gate, kept, "the attention")
    finite_on(gate, degenerate_embeddings(latent), lambda m, x: m(x), "weights [T, B]")
    round_trip(make, gate, lambda m: m(embeddings))

    def seeded(k):
        return (torch.randn(T, B, latent, generator=torch.Generator().manual_seed(k)),)

    batches_like_singles(make, seeded, _forward, what="weights")
    at_any_parameters(
        gate, lambda m, when: _permutes_with_the_batch(m, embeddings, "weights", when)
    )


def _permutes_with_the_batch(gate, x: torch.Tensor, what: str, when: str = "") -> None:
    """Permuting the batch permutes a gate's outputs [T, B] and changes nothing else."""
    order = _order()
    plain, permuted = _evaluated(gate, x, x[:, order])
    tensor(permuted, (T, B), f"one of its {what} per transition [T, B]{when}")
    if not torch.allclose(permuted, plain[:, order], rtol=1e-4, atol=1e-5):
        raise Broken(
            f"give each transition the same {what[:-1]} in any order of the batch",
            f"permuting the batch changed the {what} beyond permuting them, by "
            f"{(permuted - plain[:, order]).abs().max():.3g}{when}",
            "score a transition from its own state and order-free summaries of the batch "
            "(a mean), never from its position",
        )


@contract("block_gate", BlockGate)
def probe_block_gate(factory, given) -> None:
    width = given.get("width", 8)

    def make():
        return build(factory, "be built as cls(width=)", width=width)

    def hidden(seed: int) -> torch.Tensor:
        return torch.randn(T, B, 2, width, generator=torch.Generator().manual_seed(seed))

    gate = make()
    kept = snapshot(gate)
    x = hidden(1)
    multipliers = tensor(gate(x), (T, B), "one multiplier per transition [T, B]")
    if (multipliers < 0).any():
        raise Broken("return non-negative multipliers", "some multipliers are negative")
    reaches((multipliers * torch.randn_like(multipliers)).sum(), gate, "the multipliers' gradient")
    kept_as_promised(gate, kept, "the gate")
    alike = x[:, :1].expand_as(x).clone()
    finite_on(
        gate, {"one transition repeated": alike, "all-zero states": 0 * x}, _forward, "[T, B]"
    )
    round_trip(make, gate, lambda m: m(x))
    batches_like_singles(make, lambda k: (hidden(10 + k),), _forward, what="multipliers")
    at_any_parameters(gate, lambda m, when: _permutes_with_the_batch(m, x, "multipliers", when))


@contract("tokenizer", Tokenizer)
@each_size
def probe_tokenizer(factory, given) -> None:
    sizes, width = tuple(given["sizes"]), given.get("d_model", 8)

    def make():
        return build(factory, "be built as cls(sizes=, d_model=)", sizes=sizes, d_model=width)

    tokenizer = make()
    kept = snapshot(tokenizer)
    tokens = tokenizer(_context(sizes))
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 4:
        found = list(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens).__name__
        raise Broken("return tokens [T, B, L, D]", f"it returned {found}")
    tensor(tokens, (T, B, tokens.shape[2], width), "tokens [T, B, L, D]")
    reaches((tokens * torch.randn_like(tokens)).sum(), tokenizer, "the tokens' gradient")
    kept_as_promised(tokenizer, kept, "the tokenizer")
    finite_on(tokenizer, degenerate_contexts(sizes), lambda m, x: m(x), "tokens [T, B, L, D]")
    round_trip(make, tokenizer, lambda m: m(_context(sizes)))
    batches_like_singles(make, _seed_inputs(sizes), _forward, what="tokens")
    at_any_parameters(tokenizer, lambda m, when: on_its_own(m, sizes, when, what="tokens"))
