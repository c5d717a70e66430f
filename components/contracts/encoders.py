"""Contracts of the encoder parts: transition encoders, context encoders, attention, tokenizers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import torch

from components.contracts.core import (
    Broken,
    build,
    contract,
    loss_terms,
    reaches,
    round_trip,
    tensor,
)
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


class Tokenizer(Protocol):
    def __init__(self, *, sizes: Sequence[int], d_model: int) -> None: ...
    def forward(self, context: torch.Tensor) -> torch.Tensor: ...  # [T, B, F] -> [T, B, L, D]


def _context(sizes: Sequence[int]) -> torch.Tensor:
    return torch.randn(T, B, sum(sizes), generator=torch.Generator().manual_seed(0))


def each_size(probe):
    """Run a probe on the given sizes, or on two sets (a component must read `sizes`, not
    assume one family's width)."""

    def run(factory, given):
        for sizes in [given["sizes"]] if "sizes" in given else [SIZES, OTHER_SIZES]:
            try:
                probe(factory, {**given, "sizes": tuple(sizes)})
            except (Broken, FocalppError):
                raise
            except Exception as e:
                raise Broken(
                    f"work with the transition sizes it is given (here {tuple(sizes)}, width "
                    f"{sum(sizes)})",
                    f"it raised {type(e).__name__}: {e}",
                    "build every layer from `sizes` (their sum is a transition's width)",
                ) from e

    run.__doc__ = probe.__doc__
    return run


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
    out = encoder(_context(sizes))
    if isinstance(out, Encoded):
        raise Broken(
            "map each transition to an embedding tensor [T, B, Z]",
            "it returned a whole-context Encoded record",
            "register it as kind 'context_encoder' and select it with `focal.encoder = @...`",
        )
    tensor(out, (T, B, latent), "per-transition embeddings [T, B, Z]")
    reaches((out * torch.randn_like(out)).sum(), encoder, "the embeddings' gradient")
    round_trip(make, encoder, lambda m: m(_context(sizes)))


@contract("context_encoder", ContextEncoder)
@each_size
def probe_context_encoder(factory, given) -> None:
    sizes, latent, make = encoder_builder(factory, given)
    encoder = make()
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
    probe = (out.mean * torch.randn_like(out.mean)).sum() + sum(own.values())
    reaches(probe, encoder, "the task vector's gradient")
    round_trip(make, encoder, lambda m: m(_context(sizes)))


@contract("attention", Attention)
def probe_attention(factory, given) -> None:
    latent = given.get("latent_dim", LATENT)

    def make():
        return build(factory, "be built as cls(latent_dim=)", latent_dim=latent)

    gate = make()
    embeddings = torch.randn(T, B, latent, generator=torch.Generator().manual_seed(1))
    weights = tensor(gate(embeddings), (T, B), "one weight per transition [T, B]")
    if (weights < 0).any():
        raise Broken("return non-negative weights", "some weights are negative")
    reaches((weights * torch.randn_like(weights)).sum(), gate, "the weights' gradient")
    round_trip(make, gate, lambda m: m(embeddings))


@contract("tokenizer", Tokenizer)
@each_size
def probe_tokenizer(factory, given) -> None:
    sizes, width = tuple(given["sizes"]), given.get("d_model", 8)

    def make():
        return build(factory, "be built as cls(sizes=, d_model=)", sizes=sizes, d_model=width)

    tokenizer = make()
    tokens = tokenizer(_context(sizes))
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 4:
        found = list(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens).__name__
        raise Broken("return tokens [T, B, L, D]", f"it returned {found}")
    tensor(tokens, (T, B, tokens.shape[2], width), "tokens [T, B, L, D]")
    reaches((tokens * torch.randn_like(tokens)).sum(), tokenizer, "the tokens' gradient")
    round_trip(make, tokenizer, lambda m: m(_context(sizes)))
