"""What a contract is, and the checks its probes share.

A contract is a kind's Protocol (what a member offers, for readers and type checkers) and a probe:
a function that builds a member at tiny sizes from its factory (the registered class, under the
gin bindings in force) and checks each promise of the kind — shapes, finiteness, named `loss_*`
terms, a gradient to every trainable parameter, a state-dict round trip. A broken promise raises
`Broken(promise, found, fix)`; `check` turns it into a `ContractError` that names the
component, its kind, the promise, what was found and what to do.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from registry import FocalppError, entry_of, gin_state


class ContractError(FocalppError):
    """A component does not do what its kind promises."""


class Broken(Exception):
    """One promise a probe found broken (turned into a ContractError by `check`)."""

    def __init__(self, promise: str, found: str, fix: str = ""):
        super().__init__(promise)
        self.promise, self.found, self.fix = promise, found, fix


Probe = Callable[[Callable[..., Any], dict[str, Any]], None]


@dataclass(frozen=True)
class Contract:
    kind: str
    protocol: type
    probe: Probe


CONTRACTS: dict[str, Contract] = {}


def contract(kind: str, protocol: type) -> Callable[[Probe], Probe]:
    """Decorator: `probe` is the contract of `kind` (one per kind)."""

    def decorate(probe: Probe) -> Probe:
        CONTRACTS[kind] = Contract(kind, protocol, probe)
        return probe

    return decorate


def check(
    factory: Callable[..., Any],
    kind: str | None = None,
    *,
    name: str | None = None,
    under: str = "",
    parts: bool = True,
    **sizes: Any,
) -> None:
    """Probe `factory` against its kind's contract (its registered kind unless `kind` is given);
    `sizes` override the probe's tiny sizes (a trainer passes the run's own). The registered
    parts it is built from (its bound or default arguments, e.g. a context encoder's transition
    encoder) are probed first, so a broken part is named, not the whole. Raises ContractError
    naming the component, the kind, the promise and the fix. `parts=False` probes `factory`
    alone (its parts are probed where they are built, with the sizes they are built at)."""
    entry = entry_of(target_of(factory))
    kind = kind or (entry.kind if entry else None)
    name = name or (f"@{entry.name}" if entry else getattr(factory, "__name__", repr(factory)))
    if kind not in CONTRACTS:
        raise ContractError(f"{name}: no contract for kind {kind!r}")
    for part, part_kind, part_name in parts_of(factory) if parts else ():
        check(part, part_kind, name=part_name, under=under, **sizes)
    if under:
        name = f"{name} ({under})"
    try:
        CONTRACTS[kind].probe(factory, sizes)
    except Broken as e:
        fix = f" Fix: {e.fix}" if e.fix else ""
        raise ContractError(
            f"{name} breaks the contract of kind {kind!r}: it should {e.promise}, but "
            f"{e.found}.{fix} (the contract: components/contracts/; check a file with "
            "`python tools/catalog.py --check FILE.py`)"
        ) from e
    except FocalppError:
        raise
    except Exception as e:  # the component raised while being probed
        shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
        raise ContractError(
            f"{name} breaks the contract of kind {kind!r}: built{f' with {shown}' if shown else ''}"
            f" and probed at tiny sizes, it raised {type(e).__name__}: {e} (run with --debug "
            "for the traceback)"
        ) from e


def parts_of(factory: Any) -> list[tuple[Callable[..., Any], str, str]]:
    """(factory, kind, name) of each registered part `factory` is built from: the component
    references among its bound arguments (in its gin scope) and its defaults."""
    import gin.config

    target, scopes = factory, []
    if isinstance(factory, gin.config.ConfigurableReference):
        target, scopes = factory.configurable.wrapped, list(factory.scopes)
    entry = entry_of(target)
    if entry is None:
        return []
    params = inspect.signature(target).parameters.items()
    values = {k: p.default for k, p in params if p.default is not inspect.Parameter.empty}
    selector = entry.gin_name
    for scope in ["", *("/".join(scopes[: i + 1]) for i in range(len(scopes)))]:
        values.update(gin_state.bound_for(scope, selector))
    found = []
    for value in values.values():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, gin.config.ConfigurableReference) and not item.evaluate:
                part = entry_of(item.configurable.wrapped)
                if part is not None:
                    found.append((item, part.kind, f"@{item.scoped_selector.split('.')[-1]}"))
            elif isinstance(item, type) and entry_of(item) is not None:
                found.append((item, entry_of(item).kind, f"@{entry_of(item).name}"))
    return found


# Registered names whose contract a trainer checked in this process (check_parts): a learner
# refuses to train a registered part that skipped it (ContextLearner.check_built)
CHECKED: set[str] = set()


def check_parts(*parts: tuple[Callable[..., Any] | None, str, dict[str, Any]]) -> None:
    """`check` each (factory, kind, sizes) of a recipe's parts (None: a part the recipe left
    out), leaving the global random state as it was (a run's draws must not depend on it).
    The parts are built under the recipe's bindings, so a binding (a learning rate, a reward
    scale) can be what breaks a promise; the message says so."""
    under = "built with this run's bindings: one of them may be the cause"
    with torch.random.fork_rng(devices=[]), _calls_unrecorded():
        for factory, kind, sizes in parts:
            if factory is not None:
                check(factory, kind, under=under, **sizes)
                entry = entry_of(target_of(factory))
                if entry is not None:
                    CHECKED.add(entry.name)


@contextmanager
def _calls_unrecorded() -> Iterator[None]:
    """Leave gin's record of what was built (the operative config) as it was: the probes build
    parts at tiny sizes, outside the scopes of the run's own build, and what a binding
    configured is read from that record (registry.usage)."""
    with gin_state.record_of_calls_kept():
        yield


# --- checks the probes share -----------------------------------------------------------------


def build(factory: Callable[..., Any], promise: str, **kwargs: Any) -> Any:
    """Build a member as the trainer would; a missing or unexpected argument is a broken
    promise about the constructor. A component whose constructor needs more than its kind
    passes (a list of parts, say) gives example values in a `contract_example` dict; the
    trainer's check runs under the recipe's bindings, which supply them."""
    try:
        inspect.signature(target_of(factory)).bind_partial(**kwargs)
    except TypeError as e:
        raise Broken(promise, f"its constructor does not take {sorted(kwargs)} ({e})") from e
    example = dict(getattr(target_of(factory), "contract_example", {}))
    bound = _bound_arguments(factory)
    _required_supplied(factory, promise, {*kwargs, *example, *bound}, sorted(kwargs))
    call = _callable(factory)
    return call(**{k: v for k, v in example.items() if k not in bound}, **kwargs)


def _required_supplied(factory: Any, promise: str, supplied: set[str], passed: list[str]) -> None:
    """Every argument without a default is one the framework passes, or one gin binds."""
    try:
        params = inspect.signature(target_of(factory)).parameters
    except (TypeError, ValueError):
        return
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    missing = [
        n
        for n, p in params.items()
        if p.kind in named and p.default is inspect.Parameter.empty and n not in supplied
    ]
    if not missing:
        return
    entry = entry_of(target_of(factory))
    owner = entry.name if entry else getattr(target_of(factory), "__name__", "it")
    first = missing[0]
    raise Broken(
        promise,
        f"its constructor requires {', '.join(repr(m) for m in missing)}, which the framework "
        f"does not pass (it passes {', '.join(passed) or 'nothing'})",
        f"give {first!r} a default (`{first}: int = 64`), or bind it in the recipe "
        f"(`{owner}.{first} = 64`)",
    )


def target_of(factory: Any) -> Any:
    """The registered class or function behind `factory` (a gin reference's configurable)."""
    import gin.config

    if isinstance(factory, gin.config.ConfigurableReference):
        return factory.configurable.wrapped
    return factory


def _callable(factory: Any) -> Callable[..., Any]:
    """What builds a member: a gin reference calls its configurable in its scope."""
    import gin.config

    if isinstance(factory, gin.config.ConfigurableReference):
        return factory.scoped_configurable_fn
    return factory


def _bound_arguments(factory: Any) -> set[str]:
    """The arguments gin binds for `factory` (unscoped) in the configuration in force."""

    entry = entry_of(target_of(factory))
    if entry is None:
        return set()
    scopes = list(getattr(factory, "scopes", []))
    found = set()
    for scope in ["", *("/".join(scopes[: i + 1]) for i in range(len(scopes)))]:
        found |= set(gin_state.bound_for(scope, entry.gin_name))
    return found


def tensor(value: Any, shape: tuple[int, ...], what: str) -> torch.Tensor:
    """`value` is a finite tensor of `shape`."""
    if not isinstance(value, torch.Tensor):
        raise Broken(
            f"return {what} as a tensor of shape {list(shape)}", f"it returned {_kind(value)}"
        )
    if tuple(value.shape) != tuple(shape):
        raise Broken(
            f"return {what} of shape {list(shape)}",
            f"it returned shape {list(value.shape)}",
            "check which dimension the output keeps (tasks T, transitions B, features)",
        )
    if value.is_floating_point() and value.dtype != torch.float32:
        raise Broken(
            f"return {what} as float32, the dtype of its input",
            f"it returned {value.dtype}",
            "make every tensor it keeps float32 (torch.from_numpy keeps numpy's float64; "
            "use torch.as_tensor(x, dtype=torch.float32))",
        )
    if not torch.isfinite(value).all():
        raise Broken(f"return finite {what}", "it returned NaN or inf")
    return value


# --- degenerate but legal inputs --------------------------------------------------------------

NONFINITE_FIX = (
    "guard every division, root and logarithm against a zero: add an epsilon to a std, a "
    "norm or a variance (`x / (x.std() + 1e-6)`), or clamp before a log"
)


def finite_on(
    module: Any,
    inputs: Mapping[str, Any],
    run: Callable[[Any, Any], Any],
    what: str,
    leaves: Callable[[Any], list[torch.Tensor]] = lambda x: [],
):
    """`run(module, x)` is finite, and so is its gradient to every parameter (and to
    `leaves(x)`, inputs that carry a gradient on to other parts), on each input of `inputs`
    (description -> input): the degenerate but legal inputs of a run (a constant feature,
    all-zero sparse rewards, one transition repeated). The first submodule whose output is not
    finite is named."""
    for description, x in inputs.items():
        output, where = _first_nonfinite(module, lambda x=x: run(module, x))
        tensors = [t for t in _tensors(output) if t.is_floating_point()]
        if where is not None or not all(torch.isfinite(t).all() for t in tensors):
            raise Broken(
                f"return finite {what} on degenerate but legal inputs",
                f"on {description} it returned NaN or inf ({where or 'in its own forward'})",
                NONFINITE_FIX,
            )
        _finite_gradient(module, tensors, leaves(x), description, what)


def _finite_gradient(
    module: Any, outputs: list[torch.Tensor], leaves: list, description: str, what: str
) -> None:
    params = [(n, p) for n, p in _parameters(module) if p.requires_grad]
    params += [(f"its input {i}", x) for i, x in enumerate(leaves) if x.requires_grad]
    live = [t for t in outputs if t.requires_grad]
    if not params or not live:
        return
    g = torch.Generator().manual_seed(4)
    probe = sum((t * torch.randn(t.shape, generator=g)).sum() for t in live)
    grads = torch.autograd.grad(probe, [p for _, p in params], allow_unused=True)
    bad = [
        n
        for (n, _), grad in zip(params, grads, strict=True)
        if grad is not None and not torch.isfinite(grad).all()
    ]
    if bad:
        raise Broken(
            f"give {what} a finite gradient on degenerate but legal inputs",
            f"on {description} the gradient of {bad[:4]} is NaN or inf",
            NONFINITE_FIX,
        )


def _parameters(module: Any) -> list[tuple[str, torch.Tensor]]:
    return list(module.named_parameters()) if isinstance(module, nn.Module) else []


def _first_nonfinite(module: Any, run: Callable[[], Any]) -> tuple[Any, str | None]:
    """`run()`'s result, and the first submodule (in the order they finished) whose output had
    NaN or inf: `submodule 'norm' (Standardise)`, or `its own forward`."""
    if not isinstance(module, nn.Module):
        return run(), None
    found: list[str] = []

    def hook(name: str):
        def record(mod, args, output):
            if found or not _nonfinite(output):
                return
            inputs_finite = not _nonfinite(args)
            if name and inputs_finite:
                found.append(f"first in its submodule {name!r} ({type(mod).__name__})")
            elif not name:
                found.append("in its own forward")

        return record

    handles = [m.register_forward_hook(hook(n)) for n, m in module.named_modules()]
    try:
        result = run()
    finally:
        for handle in handles:
            handle.remove()
    return result, (found[0] if found else None)


def _nonfinite(value: Any) -> bool:
    return any(t.is_floating_point() and not torch.isfinite(t).all() for t in _tensors(value))


# --- promises that must hold for every parameter value ---------------------------------------


# Seeds of the parameter draws every probe checks a part at, past its initial parameters
DRAWS = (7, 8, 9)


@contextmanager
def perturbed(module: Any, seed: int = DRAWS[0]) -> Iterator[Any]:
    """`module` with every parameter moved away from its initial value, restored on exit.

    Residual branches and gates start at zero (the identity at initialisation that Theorem
    3.3's proof assumes), and a zero layer hides whatever its inputs would do: a gate that
    scores transitions by their position in the batch gives every one the same multiplier
    until its last layer has learnt something, and two zero layers in series hide it from a
    small nudge as well. So every promise is probed at initialisation and again at draws of
    parameters at the scale training reaches (`perturb_`)."""
    params = _movable(module)
    saved = [p.detach().clone() for p in params]
    perturb_(module, seed)
    try:
        yield module
    finally:
        with torch.no_grad():
            for p, value in zip(params, saved, strict=True):
                p.copy_(value)


def perturb_(module: Any, seed: int) -> None:
    """Move every initialised floating-point parameter of `module` by noise as large as the
    parameter itself (its root mean square), or, for one that starts at zero, as large as a
    freshly initialised layer's (1/sqrt(fan-in) for a weight, 1/sqrt(length) for a bias, a
    gate or a scale): where trained parts get to.
    Drawn from `seed` alone: the global random stream is left as it was."""
    draws = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in _movable(module):
            rms = float(p.detach().float().pow(2).mean().sqrt())
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            scale = rms if rms > 1e-8 else fan_in**-0.5
            p.add_(scale * torch.randn(p.shape, generator=draws).to(p.dtype))


def _movable(module: Any) -> list[torch.Tensor]:
    """The parameters a probe may move: initialised, floating point (none for a non-module)."""
    if not isinstance(module, nn.Module):
        return []
    lazy = nn.parameter.UninitializedParameter
    return [p for p in module.parameters() if not isinstance(p, lazy) and p.is_floating_point()]


def at_any_parameters(module: Any, promise: Callable[[Any, str], None]) -> None:
    """Check `promise(module, when)` at the initial parameters and at each draw of DRAWS
    (`when` says which, for the message)."""
    promise(module, "")
    if not _movable(module):
        return
    for seed in DRAWS:
        when = f" (with its parameters moved off their initial values, draw {seed})"
        with perturbed(module, seed):
            try:
                promise(module, when)
            except Broken as e:  # a shared check that does not say when: said here
                if when in e.found:
                    raise
                raise Broken(e.promise, e.found + when, e.fix) from e


# --- how a part keeps its tensors ------------------------------------------------------------


@dataclass(frozen=True)
class Kept:
    """What a freshly built module keeps, before its first forward."""

    plain: list[str]  # tensors kept as plain attributes
    lazy: list[str]  # parameters without a size yet (lazy layers)
    parameters: set[int]


def snapshot(module: Any) -> Kept:
    if not isinstance(module, nn.Module):
        return Kept([], [], set())
    plain = [
        f"{name}.{key}" if name else key
        for name, sub in module.named_modules()
        for key, value in vars(sub).items()
        if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter)
    ]
    uninitialised = nn.parameter.UninitializedParameter
    lazy = [n for n, p in module.named_parameters() if isinstance(p, uninitialised)]
    return Kept(plain, lazy, {id(p) for p in module.parameters()})


def kept_as_promised(module: Any, kept: Kept, what: str) -> None:
    """Every tensor `module` kept when built is a parameter or a buffer (a checkpoint saves
    those and `.to(device)` moves them), and its layers existed before its first forward (the
    trainer makes its optimisers from the parameters before the first step)."""
    if kept.plain:
        raise Broken(
            f"keep every tensor of {what} as a parameter or a buffer",
            f"{', '.join(kept.plain[:4])}: plain tensor attribute(s), which a checkpoint does "
            "not save and .to(device) does not move",
            "self.register_buffer('name', tensor) for a fixed tensor, nn.Parameter(tensor) for "
            "a learned one",
        )
    new = [n for n, p in module.named_parameters() if id(p) not in kept.parameters]
    if kept.lazy or new:
        raise Broken(
            f"create every layer of {what} with its size in __init__",
            f"{', '.join((kept.lazy or new)[:4])} came into being in the first forward",
            "the trainer makes its optimiser before the first step, so such a layer is never "
            "trained and a checkpoint does not restore it: build it in __init__ from the sizes "
            "given (nn.Linear, not nn.LazyLinear)",
        )


def loss_terms(value: Any, what: str) -> dict[str, torch.Tensor]:
    """`value` is a mapping with at least one `loss_*` term, each a finite scalar tensor."""
    if not isinstance(value, Mapping):
        raise Broken(
            f"return from {what} a dict of named terms with at least one `loss_*`",
            f"it returned {_kind(value)}",
            'return {"loss_mine": loss, ...diagnostics}',
        )
    losses = {k: v for k, v in value.items() if k.startswith("loss_")}
    if not losses:
        raise Broken(
            f"return from {what} at least one `loss_*` term (only those are optimised)",
            f"its keys are {sorted(value)}: nothing would be trained",
            "name the term to minimise `loss_<something>`",
        )
    for key, term in losses.items():
        if not isinstance(term, torch.Tensor) or term.dim() != 0:
            raise Broken(f"make {key} a scalar tensor", f"it is {_kind(term)}")
        if not torch.isfinite(term):
            raise Broken(f"make {key} finite", f"it is {float(term.detach())}")
    return losses


def carries_gradient(output: torch.Tensor, module: nn.Module, what: str) -> None:
    """An encoder's output carries a gradient: the objective's loss trains the encoder through
    it (a run would stop at its first step: 'element 0 of tensors does not require grad')."""
    if output.requires_grad:
        return
    trainable = [n for n, p in module.named_parameters() if p.requires_grad]
    raise Broken(
        f"let {what} carry a gradient to its trainable parameters (its loss trains it)",
        "it has no trainable parameter: it computes from plain or fixed tensors only"
        if not trainable
        else "it was computed from detached tensors or under no_grad",
        "make what it learns an nn.Parameter (a plain tensor attribute is neither trained nor "
        "saved)"
        if not trainable
        else "do not detach its output",
    )


def reaches(loss: torch.Tensor, module: nn.Module, what: str, inputs: tuple = ()) -> None:
    """Back-propagating `loss` reaches every trainable parameter of `module` (and `inputs`)."""
    params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    targets = [p for _, p in params] + [x for x in inputs if x.requires_grad]
    if not targets:
        return
    if not loss.requires_grad:
        raise Broken(
            f"let {what} carry a gradient to its inputs and parameters",
            "it has none (it was computed from detached tensors or under no_grad)",
        )
    grads = torch.autograd.grad(loss, targets, allow_unused=True)
    unreached = [n for (n, _), g in zip(params, grads, strict=False) if g is None]
    if unreached:
        raise Broken(
            f"let {what} reach every trainable parameter",
            f"no gradient reaches {unreached[:4]}{' ...' if len(unreached) > 4 else ''}",
            "use every parameter in forward, or freeze the unused ones (requires_grad_(False))",
        )
    for x, g in zip(inputs, grads[len(params) :], strict=False):
        if x.requires_grad and g is None:
            raise Broken(f"let {what} depend on its input", "no gradient reaches the input")


def round_trip(factory: Callable[[], nn.Module], module: nn.Module, run: Callable) -> None:
    """A fresh member that loads `module`'s state dict computes what `module` computes."""
    if not isinstance(module, nn.Module):
        raise Broken("be a torch.nn.Module", f"it is {_kind(module)}")
    state = copy.deepcopy(module.state_dict())
    twin = factory()
    try:
        twin.load_state_dict(state)
    except (RuntimeError, KeyError) as e:
        raise Broken("load its own state dict into a fresh copy", f"loading failed: {e}") from e
    module.eval(), twin.eval()
    with torch.no_grad(), torch.random.fork_rng():  # the same draws for both (sampling policies)
        torch.manual_seed(0)
        a = run(module)
        torch.manual_seed(0)
        b = run(twin)
    if not all(torch.equal(x, y) for x, y in zip(_tensors(a), _tensors(b), strict=True)):
        raise Broken(
            "compute the same output after a state-dict round trip (a checkpoint restores it)",
            "a fresh copy loaded with its state dict computes something else",
            "register every tensor the output depends on as a parameter or buffer",
        )


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in _tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if hasattr(value, "__dataclass_fields__"):
        return [t for k in value.__dataclass_fields__ for t in _tensors(getattr(value, k))]
    return []


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {list(value.shape)}"
    return f"a {type(value).__name__}"


def has_methods(factory: Any, names: tuple[str, ...], promise: str) -> None:
    """The member's class offers `names` (for kinds whose probe cannot afford to run them)."""
    target = target_of(factory)
    target = target if inspect.isclass(target) else None
    missing = [n for n in names if target is not None and not callable(getattr(target, n, None))]
    if missing:
        raise Broken(promise, f"it has no {', '.join(missing)}")


def takes(factory: Any, names: tuple[str, ...], promise: str) -> None:
    """The constructor accepts the keyword arguments `names`."""
    try:
        params = inspect.signature(target_of(factory)).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    missing = [n for n in names if n not in params]
    if missing:
        raise Broken(promise, f"its constructor has no argument {', '.join(missing)}")
