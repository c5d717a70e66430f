"""Portable matrix products (components/products.py): with portable numerics, float32 `mm`,
`addmm`, `bmm` and `baddbmm` are numpy's OpenBLAS product to the bit, forward and backward, with
PyTorch's semantics (broadcast bias, alpha and beta, beta = 0 not reading `self`, empty shapes)
and PyTorch's own errors; other dtypes keep PyTorch's kernels."""

import numpy as np
import pytest
import torch

from components import numerics, products

# the suite runs with portable numerics (tests/conftest.py), so state() installs them
numerics.state()


def ours(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The OpenBLAS product the kernels promise, computed by numpy directly."""
    return torch.from_numpy(np.matmul(a.numpy(), b.numpy()))


def mkl(op, *args, **kwargs) -> torch.Tensor:
    """PyTorch's own kernel for `op` (its out= form, which products.py leaves alone)."""
    out = torch.empty(0, dtype=args[-1].dtype)
    return getattr(torch.ops.aten, op).out(*args, **kwargs, out=out)


def test_state_records_the_portable_products():
    assert products.installed()
    assert numerics.state()["products"] == "openblas"


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


def test_each_product_is_openblas_to_the_bit(gen):
    a, b = torch.randn(37, 19, generator=gen), torch.randn(19, 23, generator=gen)
    bias = torch.randn(23, generator=gen)
    stack_a, stack_b = torch.randn(3, 37, 19, generator=gen), torch.randn(3, 19, 23, generator=gen)
    stack_bias = torch.randn(3, 1, 23, generator=gen)
    assert torch.equal(torch.mm(a, b), ours(a, b))
    assert torch.equal(a @ b, ours(a, b))
    assert torch.equal(torch.addmm(bias, a, b), ours(a, b) + bias)
    assert torch.equal(torch.addmm(bias, a, b, beta=0.5, alpha=2), ours(a, b) * 2 + bias * 0.5)
    assert torch.equal(torch.bmm(stack_a, stack_b), ours(stack_a, stack_b))
    assert torch.equal(
        torch.baddbmm(stack_bias, stack_a, stack_b, alpha=3),
        ours(stack_a, stack_b) * 3 + stack_bias,
    )
    # a transposed operand, as a backward pass gives one: OpenBLAS reads it in place
    assert torch.equal(torch.mm(a.t(), a), ours(a.t(), a))
    # and the products are close to the exact ones: a product, not merely a fixed function
    exact = a.double() @ b.double()
    assert torch.allclose(torch.mm(a, b).double(), exact, rtol=0, atol=1e-5)


def test_gradients_flow_through_the_products(gen):
    layer = torch.nn.Linear(11, 5)
    x = torch.randn(7, 11, generator=gen, requires_grad=True)
    layer(x).square().sum().backward()
    with torch.no_grad():
        y = ours(x.detach(), layer.weight.t().contiguous()) + layer.bias
        grad_y = 2 * y
    assert torch.equal(layer.bias.grad, grad_y.sum(0))
    assert torch.allclose(layer.weight.grad, grad_y.t() @ x.detach(), rtol=0, atol=1e-6)
    assert torch.allclose(x.grad, grad_y @ layer.weight.detach(), rtol=0, atol=1e-6)


def test_beta_zero_does_not_read_self(gen):
    nan = torch.full((4, 6), float("nan"))
    a, b = torch.randn(4, 3, generator=gen), torch.randn(3, 6, generator=gen)
    assert torch.equal(torch.addmm(nan, a, b, beta=0), ours(a, b))
    assert torch.equal(torch.baddbmm(nan[None], a[None], b[None], beta=0), ours(a, b)[None])


def test_empty_shapes_are_products_too():
    assert torch.mm(torch.ones(0, 3), torch.ones(3, 5)).shape == (0, 5)
    assert torch.equal(torch.mm(torch.ones(2, 0), torch.ones(0, 5)), torch.zeros(2, 5))
    assert torch.bmm(torch.ones(0, 2, 3), torch.ones(0, 3, 4)).shape == (0, 2, 4)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_other_dtypes_keep_pytorchs_kernels(dtype, gen):
    a = torch.randn(9, 13, generator=gen).to(dtype)
    b = torch.randn(13, 6, generator=gen).to(dtype)
    bias = torch.randn(6, generator=gen).to(dtype)
    assert torch.mm(a, b).dtype == dtype
    assert torch.equal(torch.mm(a, b), mkl("mm", a, b))
    assert torch.equal(torch.addmm(bias, a, b), mkl("addmm", bias, a, b))
    assert torch.equal(torch.bmm(a[None], b[None]), mkl("bmm", a[None], b[None]))


@pytest.mark.parametrize(
    "call, said",
    [
        (lambda: torch.mm(torch.ones(2, 3), torch.ones(4, 5)), "shapes cannot be multiplied"),
        (lambda: torch.mm(torch.ones(3), torch.ones(3, 5)), "must be a matrix"),
        (lambda: torch.mm(torch.ones(2, 3), torch.ones(3, 5).double()), "same dtype"),
        (lambda: torch.bmm(torch.ones(4, 2, 3), torch.ones(3, 3, 5)), "batch2"),
        (lambda: torch.addmm(torch.ones(7), torch.ones(2, 3), torch.ones(3, 5)), "size"),
    ],
)
def test_bad_operands_get_pytorchs_own_errors(call, said):
    with pytest.raises(RuntimeError, match=said):
        call()


# --- threads: a product cut into bands of rows is the uncut product, bit for bit ----------


@pytest.fixture
def banded():
    """Products on several threads, every product cut (no threshold); one thread after."""
    yield lambda threads: products.use_threads(threads, min_work=0)
    products.use_threads(1, min_work=products.MIN_WORK)


def test_bands_cut_at_multiples_of_the_kernels_tile():
    for rows in (24, 25, 35, 36, 100, 1600, 1601):
        for threads in (2, 3, 4, 7, 16):
            bands = products.bands(rows, threads)
            edges = [start for start, _ in bands] + [bands[-1][1]]
            assert edges[0] == 0 and edges[-1] == rows and edges == sorted(set(edges))
            assert all(cut % products.BAND == 0 for cut in edges[:-1])
            assert all(end - start >= products.BAND for start, end in bands)
            assert 2 <= len(bands) <= threads
    assert products.bands(1600, 2) == [(0, 792), (792, 1600)]


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_banded_products_are_the_uncut_ones_to_the_bit(threads, banded, gen):
    """Every row count, inner size and layout a network's forward and backward passes give
    (a transposed operand read in place, a stack of matrices, a bias added): the same bits."""
    cases = []
    for rows in (24, 25, 37, 100, 256, 803):
        for inner in (1, 2, 20, 27, 256, 321, 700):
            for columns in (2, 6, 17, 256):
                a = torch.randn(rows, inner, generator=gen)
                b = torch.randn(inner, columns, generator=gen)
                cases.append((a, b))
                cases.append((torch.randn(inner, rows, generator=gen).t(), b))  # a.t() in place
                cases.append((a, torch.randn(columns, inner, generator=gen).t()))
    stacks = [
        (torch.randn(3, 61, 27, generator=gen), torch.randn(3, 27, 40, generator=gen)),
        (torch.randn(2, 33, 200, generator=gen).transpose(1, 2), torch.randn(2, 33, 7)),
        (torch.randn(2, 1600, 27, generator=gen), torch.randn(2, 40, 27).transpose(1, 2)),
    ]
    bias = torch.randn(1, generator=gen)
    whole = [torch.mm(a, b) for a, b in cases]
    whole_added = [torch.addmm(bias, a, b, alpha=0.5) for a, b in cases[::7]]
    whole_stacked = [torch.bmm(a, b) for a, b in stacks]
    whole_stacked_added = [torch.baddbmm(bias, a, b, beta=2) for a, b in stacks]
    banded(threads)
    same = [torch.equal(x, torch.mm(a, b)) for x, (a, b) in zip(whole, cases, strict=True)]
    assert same == [True] * len(cases)
    for x, (a, b) in zip(whole_added, cases[::7], strict=True):
        assert torch.equal(x, torch.addmm(bias, a, b, alpha=0.5))
    for x, y, (a, b) in zip(whole_stacked, whole_stacked_added, stacks, strict=True):
        assert torch.equal(x, torch.bmm(a, b))
        assert torch.equal(y, torch.baddbmm(bias, a, b, beta=2))
        assert torch.equal(x, ours(a, b))  # still numpy's product of the same operands


def test_a_training_step_on_two_threads_is_the_one_thread_step(banded):
    """A conditioned SAC update (networks shared by 40 tasks, the long builds' learner), the
    products cut into bands: the same parameters after three steps, to the bit."""
    from components.rl.sac import TaskConditionedSAC
    from components.transitions import Transitions

    def trained():
        torch.manual_seed(0)
        agent = TaskConditionedSAC(
            n_tasks=40, obs_dim=20, act_dim=6, hidden=(64, 64), task_features=torch.randn(40, 1)
        )
        g = torch.Generator().manual_seed(1)
        data = Transitions(
            obs=torch.randn(40, 8, 20, generator=g),
            action=torch.rand(40, 8, 6, generator=g) * 2 - 1,
            reward=torch.randn(40, 8, generator=g),
            sparse_reward=torch.zeros(40, 8),
            next_obs=torch.randn(40, 8, 20, generator=g),
            terminated=torch.zeros(40, 8),
            truncated=torch.zeros(40, 8),
        )
        for _ in range(3):
            agent.update(data)
        return [p.detach().clone() for p in agent.parameters()]

    one = trained()
    banded(2)
    two = trained()
    assert len(one) == len(two) > 0
    assert all(torch.equal(x, y) for x, y in zip(one, two, strict=True))


def test_x_times_its_own_transpose_is_left_whole(banded, gen):
    """numpy computes x @ x.T by a symmetric routine: cutting it would change its bits."""
    x = torch.randn(48, 30, generator=gen)
    whole = torch.mm(x, x.t())
    banded(2)
    assert torch.equal(torch.mm(x, x.t()), whole)
    assert torch.equal(whole, ours(x, x.t()))


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_thread_count_that_is_not_a_whole_number_is_refused(bad):
    with pytest.raises(products.ProductsError, match="expected a whole number ≥ 1"):
        products.use_threads(bad)
    assert products.threads() == 1
