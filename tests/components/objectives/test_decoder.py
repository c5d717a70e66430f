"""UNICORN's objectives: the transition decoder on a known linear system, its gradient into
the task vector, and the supervised variant's task classifier."""

from __future__ import annotations

import math

import pytest
import torch

from components.objectives.classifier import TaskClassifier
from components.objectives.decoder import TransitionDecoder, gaussian_nll
from components.objectives.embeddings import TaskEmbeddings
from components.transitions import Transitions
from registry import RecipeError

OBS, ACT, Z = 2, 1, 2


def linear_system(tasks: int, batch: int, noise: float, seed: int) -> TaskEmbeddings:
    """s′ − s = A [s, a] + C z_task + noise, r = w·[s, a] + noise: task vectors z set apart."""
    g = torch.Generator().manual_seed(seed)
    A = torch.tensor([[0.5, -0.2, 0.3], [0.1, 0.4, -0.6]])
    C = torch.tensor([[1.0, 0.0], [0.0, -1.0]])
    w = torch.tensor([0.7, -0.3, 0.2])
    z = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])[:tasks]
    obs = torch.randn(tasks, batch, OBS, generator=g)
    action = torch.randn(tasks, batch, ACT, generator=g)
    x = torch.cat([obs, action], -1)
    step = x @ A.T + (z @ C.T)[:, None] + noise * torch.randn(tasks, batch, OBS, generator=g)
    reward = x @ w + noise * torch.randn(tasks, batch, generator=g)
    zeros = torch.zeros(tasks, batch)
    context = Transitions(obs, action, reward, zeros, obs + step, zeros, zeros)
    query = z[:, None].expand(-1, batch, -1).clone().requires_grad_()
    return TaskEmbeddings(query, query.mean(1), torch.arange(tasks), context=context)


def test_gaussian_nll_matches_the_density():
    target, mean, log_var = (
        torch.tensor([[0.3, -1.0]]),
        torch.tensor([[0.1, 0.0]]),
        torch.zeros(1, 2),
    )
    density = torch.distributions.Normal(mean, log_var.mul(0.5).exp())
    assert torch.allclose(gaussian_nll(target, mean, log_var), -density.log_prob(target).sum(-1))


def test_the_decoder_fits_a_linear_system_to_its_noise_floor():
    """Fresh context batches every step, as in training: the held-out negative log-likelihood
    comes down to the true density's, ½(1 + log 2πσ²) per output."""
    torch.manual_seed(0)
    noise = 0.1
    decoder = TransitionDecoder(obs_dim=OBS, act_dim=ACT, latent_dim=Z, hidden=(32, 32))
    opt = torch.optim.Adam(decoder.parameters(), lr=3e-3)
    for step in range(600):
        opt.zero_grad()
        decoder(linear_system(3, 64, noise, seed=step))["loss_reconstruction"].backward()
        opt.step()
    nll = float(decoder(linear_system(3, 512, noise, seed=10**6))["reconstruction_nll"])
    floor = (OBS + 1) * 0.5 * (1 + math.log(2 * math.pi * noise**2))
    assert floor - 0.05 < nll < floor + 0.25


def test_the_reconstruction_teaches_the_task_vector():
    emb = linear_system(3, 16, 0.1, seed=3)
    decoder = TransitionDecoder(obs_dim=OBS, act_dim=ACT, latent_dim=Z)
    (grad,) = torch.autograd.grad(decoder(emb)["loss_reconstruction"], emb.query)
    assert grad.abs().sum() > 0  # through z, not detached


def test_the_decoder_needs_the_context():
    query = torch.zeros(2, 3, Z)
    with pytest.raises(RecipeError, match="needs the context transitions"):
        TransitionDecoder(obs_dim=OBS, act_dim=ACT, latent_dim=Z)(
            TaskEmbeddings(query, query.mean(1), torch.arange(2))
        )


def test_the_task_classifier_learns_separable_tasks():
    torch.manual_seed(0)
    z = torch.randn(4, 3) * 3
    emb = TaskEmbeddings(z[:, None], z, torch.arange(4))
    classifier = TaskClassifier(latent_dim=3, n_tasks=4, hidden=())
    opt = torch.optim.Adam(classifier.parameters(), lr=0.1)
    with torch.no_grad():
        first = float(classifier(emb)["loss_classifier"])
        expected = float(torch.nn.functional.cross_entropy(classifier.net(z), torch.arange(4)))
    assert first == pytest.approx(expected, rel=1e-6)
    for _ in range(200):
        opt.zero_grad()
        classifier(emb)["loss_classifier"].backward()
        opt.step()
    terms = classifier(emb)
    assert float(terms["classifier_accuracy"]) == 1.0 and terms["loss_classifier"].item() < 0.1
