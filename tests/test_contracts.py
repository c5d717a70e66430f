"""Every kind's contract, tested over the whole catalogue: a built-in component is covered by
being registered. Then the probes themselves: each broken promise an author can make is caught,
and the message names the component, its kind, the promise and the fix."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import components
from components.contracts import CONTRACTS, ContractError, check
from components.encoders.encoded import Encoded
from components.envs.point_robot import SparsePointRobot
from registry import KINDS, entries

components.load_builtin(opt_in=True)  # the first edition's parts keep their contracts
BUILTIN = [e for e in entries() if e.module.startswith("components.")]


def test_every_kind_has_a_contract():
    assert set(CONTRACTS) == set(KINDS)


def test_every_kind_has_a_member():
    assert {e.kind for e in BUILTIN} == set(KINDS)


@pytest.mark.parametrize("entry", BUILTIN, ids=lambda e: f"{e.kind}:{e.name}")
def test_every_registered_component_honours_its_contract(entry):
    check(entry.obj)


# --- what the probes catch ------------------------------------------------------------------


class WrongShape(nn.Module):
    def __init__(self, *, sizes, latent_dim):
        super().__init__()
        self.net = nn.Linear(sum(sizes), latent_dim)

    def forward(self, context):
        return self.net(context).mean(1)  # [T, Z]: averaged where [T, B, Z] is promised


class Unused(WrongShape):
    def __init__(self, *, sizes, latent_dim):
        super().__init__(sizes=sizes, latent_dim=latent_dim)
        self.spare = nn.Linear(3, 3)

    def forward(self, context):
        return self.net(context)


class Unregistered(nn.Module):
    """Its output depends on a tensor that is neither a parameter nor a buffer."""

    def __init__(self, *, sizes, latent_dim):
        super().__init__()
        self.net = nn.Linear(sum(sizes), latent_dim)
        self.offset = torch.randn(latent_dim)

    def forward(self, context):
        return self.net(context) + self.offset


class Whole(WrongShape):
    def forward(self, context):
        e = self.net(context)
        return Encoded(e, torch.ones(e.shape[:2]), e.mean(1))


class WiderActions(SparsePointRobot):
    """Claims actions up to ±2 while its environment takes ±1: stored actions would be held
    to the wrong bound."""

    action_bound = 2.0


class BareTensor(nn.Module):
    def forward(self, emb):
        return emb.query_mean.pow(2).mean()


class NoLoss(nn.Module):
    def forward(self, emb):
        return {"spread": emb.query_mean.pow(2).mean()}


class BatchCentred(WrongShape):
    """Subtracts the batch's mean: each transition's embedding depends on the others."""

    def forward(self, context):
        out = self.net(context)
        return out - out.mean(1, keepdim=True)


class Detached(nn.Module):
    def forward(self, emb):
        return {"loss_nothing": emb.query_mean.detach().pow(2).mean()}


@pytest.mark.parametrize(
    ("component", "kind", "message"),
    [
        (
            WrongShape,
            "transition_encoder",
            r"should return per-transition embeddings \[T, B, Z\]"
            r" of shape \[3, 4, 5\], but it returned shape \[3, 5\]",
        ),
        (Unused, "transition_encoder", r"no gradient reaches \['spare.weight', 'spare.bias'\]"),
        (Unregistered, "transition_encoder", "as a parameter or a buffer, but offset: plain"),
        (Whole, "transition_encoder", "register it as kind 'context_encoder'"),
        (BatchCentred, "transition_encoder", "compute each transition's embedding on its own"),
        (WrongShape, "context_encoder", "a per-transition encoder is kind 'transition_encoder'"),
        (BareTensor, "objective", r"a dict of named terms .* it returned a tensor of shape \[\]"),
        (NoLoss, "objective", r"its keys are \['spread'\]: nothing would be trained"),
        (Detached, "objective", "should let its loss carry a gradient"),
        (WiderActions, "env", r"act in \[-2, 2\]\^2 \(its action_bound, act_dim\)"),
    ],
    ids=[
        "shape",
        "unused parameter",
        "unregistered tensor",
        "whole-context as transition",
        "embedding that depends on the batch",
        "transition as whole-context",
        "bare tensor",
        "no loss_ term",
        "no gradient to input",
        "action bound not the environment's",
    ],
)
def test_a_broken_promise_is_named(component, kind, message):
    with pytest.raises(ContractError, match=message) as caught:
        check(component, kind)
    assert f"{component.__name__} breaks the contract of kind {kind!r}" in str(caught.value)


def test_an_agent_that_leaves_a_parameter_untrained_is_named():
    from components.rl.brac import BRAC

    class Forgetful(BRAC):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.extra = nn.Linear(2, 2)  # in no optimizer

    with pytest.raises(ContractError, match=r"\['extra.weight', 'extra.bias'\] are in none"):
        check(Forgetful, "agent")


def test_a_part_is_blamed_before_the_whole():
    """A context encoder built from a broken transition encoder names the transition encoder."""
    import gin

    from components.encoders.context import ContextEncoder
    from registry import register

    register("transition_encoder", "contract_test_wrong_shape")(WrongShape)
    gin.parse_config("context_encoder.transition = @contract_test_wrong_shape")
    with pytest.raises(ContractError, match=r"^@contract_test_wrong_shape breaks"):
        check(ContextEncoder)


# --- gradients from every output, degenerate inputs, how a part keeps its tensors ----------


class FixedFeatures(nn.Module):
    """No trainable parameter: its output carries no gradient (a run would stop at step 1)."""

    def __init__(self, *, sizes, latent_dim):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.register_buffer("proj", torch.randn(sum(sizes), latent_dim, generator=g))

    def forward(self, context):
        return (context @ self.proj).tanh()


class Standardise(nn.Module):
    def forward(self, x):
        return (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True)  # no epsilon


class Standardised(WrongShape):
    def __init__(self, *, sizes, latent_dim):
        super().__init__(sizes=sizes, latent_dim=latent_dim)
        self.norm = Standardise()

    def forward(self, context):
        return self.net(self.norm(context))


class Spread(WrongShape):
    """Finite output, but sqrt(0)'s gradient on a context of one repeated transition."""

    def forward(self, context):
        h = self.net(context)
        return h + (h - h.mean(1, keepdim=True)).pow(2).mean(1, keepdim=True).sqrt()


class Deep(WrongShape):
    def __init__(self, *, sizes, latent_dim, depth: int):
        super().__init__(sizes=sizes, latent_dim=latent_dim)


class MadeInForward(nn.Module):
    def __init__(self, *, sizes, latent_dim):
        super().__init__()
        self.latent_dim = latent_dim

    def forward(self, context):
        if "net" not in self._modules:
            self.net = nn.Linear(context.shape[-1], self.latent_dim)
        return self.net(context)


class NoSuper(nn.Module):
    def __init__(self, *, sizes, latent_dim):
        self.net = nn.Linear(sum(sizes), latent_dim)


class Headed(nn.Module):
    """A per-transition head that only the per-transition embeddings go through (for an
    objective on transitions): its parameters get no gradient from the task vector."""

    def __init__(self, *, sizes, latent_dim):
        super().__init__()
        self.body = nn.Linear(sum(sizes), latent_dim)
        self.head = nn.Linear(latent_dim, latent_dim)

    def forward(self, context):
        h = self.body(context)
        return Encoded(self.head(h), torch.ones(h.shape[:2]), h.mean(1))


class OtherTransitions(nn.Module):
    """Its loss reads only the encoder's embeddings of other transitions (emb.encode)."""

    def forward(self, emb):
        return {"loss_other": emb.encode(emb.context).pow(2).mean()}


@pytest.mark.parametrize(
    ("component", "kind", "message"),
    [
        (FixedFeatures, "transition_encoder", "it has no trainable parameter"),
        (
            Standardised,
            "transition_encoder",
            r"on a context whose rewards are all zero .*\(first in its submodule 'norm' "
            r"\(Standardise\)\)",
        ),
        (Spread, "transition_encoder", r"the gradient of \['net.weight', 'net.bias'\] is NaN"),
        (
            Deep,
            "transition_encoder",
            r"requires 'depth', which the framework does not pass.*`Deep.depth = 64`",
        ),
        (MadeInForward, "transition_encoder", r"net.weight, net.bias came into being"),
        (NoSuper, "transition_encoder", r"call super\(\).__init__\(\) first"),
    ],
    ids=[
        "no parameters",
        "nan on a constant feature",
        "nan gradient",
        "required argument",
        "layer made in forward",
        "no super().__init__",
    ],
)
def test_what_the_probes_also_catch(component, kind, message):
    with pytest.raises(ContractError, match=message):
        check(component, kind)


def test_a_per_transition_head_receives_its_gradient_from_the_per_transition_output():
    check(Headed, "context_encoder")


def test_an_objective_may_train_the_encoder_through_encode():
    check(OtherTransitions, "objective")


def test_an_objective_is_probed_with_the_run_s_number_of_tasks():
    """Task ids stay below n_tasks (two-task families), so a classifier over tasks works."""
    from components.objectives.classifier import TaskClassifier

    check(TaskClassifier, "objective", n_tasks=2, obs_dim=3, act_dim=2, latent_dim=5)


# --- promises probed past initialisation ----------------------------------------------------


class CumulativeGate(nn.Module):
    """Scores each transition against the running sum of the batch before it: its multipliers
    depend on the batch's order. Its last layer starts at zero, as the paper's identity at
    initialisation asks of every gate, so at initialisation every multiplier is 1 whatever the
    order."""

    def __init__(self, *, width):
        super().__init__()
        self.score = nn.Sequential(nn.Linear(2 * width, 2), nn.Tanh(), nn.Linear(2, 1))
        nn.init.zeros_(self.score[-1].weight)
        nn.init.zeros_(self.score[-1].bias)

    def forward(self, hidden):
        state = hidden.mean(2)
        before = state.cumsum(1)
        return 2.0 * torch.sigmoid(self.score(torch.cat([state, before], -1)).squeeze(-1))


class PositionalContext(nn.Module):
    """A task vector that weighs transitions by their place in the batch, through a layer that
    starts at zero."""

    def __init__(self, *, sizes, latent_dim):
        super().__init__()
        self.net = nn.Linear(sum(sizes), latent_dim)
        self.position = nn.Linear(1, 1)
        nn.init.zeros_(self.position.weight)
        nn.init.zeros_(self.position.bias)

    def forward(self, context):
        e = self.net(context)
        place = torch.linspace(0, 1, e.shape[1])[None, :, None].expand(*e.shape[:2], 1)
        w = (1.0 + torch.tanh(self.position(place))).squeeze(-1)
        return Encoded(e, w, (w[..., None] * e).sum(1) / w.sum(1, keepdim=True))


@pytest.mark.parametrize(
    ("component", "kind", "message"),
    [
        (
            CumulativeGate,
            "block_gate",
            r"same multiplier in any order of the batch.*with its parameters moved off",
        ),
        (
            PositionalContext,
            "context_encoder",
            r"encode a context as a set.*changed the task vector .*with its parameters moved off",
        ),
    ],
    ids=["gate by position, zero-initialised", "task vector by position, zero-initialised"],
)
def test_an_order_promise_is_probed_past_initialisation(component, kind, message):
    with pytest.raises(ContractError, match=message):
        check(component, kind)


class DeeplyZeroMixedTokenizer(nn.Module):
    """One token per transition, plus the batch's mean through three layers that start at zero:
    nudged a little, the mean moves its tokens by the product of three small numbers (below any
    tolerance); trained, by as much as the transition itself."""

    def __init__(self, *, sizes, d_model):
        super().__init__()
        n = sum(sizes)
        self.project = nn.Linear(n, d_model)
        self.mix = nn.Sequential(nn.Linear(n, n), nn.Linear(n, n), nn.Linear(n, d_model))
        for layer in self.mix:
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, x):
        return (self.project(x) + self.mix(x.mean(1, keepdim=True)))[..., None, :]


class TemperedObjective(nn.Module):
    """A loss with a learned temperature t that starts at 0 and enters as -log(0.01 - t²):
    finite at initialisation and near it, NaN once training takes |t| past 0.1."""

    def __init__(self):
        super().__init__()
        self.t = nn.Parameter(torch.zeros(()))

    def forward(self, batch):
        spread = (batch.query_mean - batch.query_mean.mean(0)).pow(2).mean()
        return {"loss_tempered": spread - torch.log(0.01 - self.t**2)}


@pytest.mark.parametrize(
    ("component", "kind", "message"),
    [
        (
            DeeplyZeroMixedTokenizer,
            "tokenizer",
            r"compute each transition's tokens on its own.*moved off their initial values, draw",
        ),
        (
            TemperedObjective,
            "objective",
            r"make loss_tempered finite.*it is nan \(with its parameters moved off",
        ),
    ],
    ids=["tokens mixed through three zero layers", "loss finite only near initialisation"],
)
def test_a_promise_kept_only_near_initialisation_is_broken(component, kind, message):
    """Probes draw parameters at the scale trained parts reach, not a nudge: these two keep
    their kind's promise at initialisation and within a tenth of it (the probes' earlier
    nudge: 0.1 × RMS + 0.01), and break it once moved as training moves them."""
    part = component(sizes=(2, 2, 2, 1), d_model=8) if kind == "tokenizer" else component()
    initial = {n: p.detach().clone() for n, p in part.named_parameters()}
    with torch.no_grad():  # the old nudge, by hand: the promise still holds there
        for p in part.parameters():
            p.add_(0.01 * torch.randn(p.shape, generator=torch.Generator().manual_seed(7)))
    if kind == "tokenizer":
        from components.contracts.encoders import on_its_own

        on_its_own(part, (2, 2, 2, 1), what="tokens")
    else:
        from components.contracts.objectives import embeddings

        assert torch.isfinite(part(embeddings(False))["loss_tempered"])
    assert any(not torch.equal(p, initial[n]) for n, p in part.named_parameters())
    with pytest.raises(ContractError, match=message):
        check(component, kind)
