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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from registry import FocalppError, entry_of


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
    **sizes: Any,
) -> None:
    """Probe `factory` against its kind's contract (its registered kind unless `kind` is given);
    `sizes` override the probe's tiny sizes (a trainer passes the run's own). The registered
    parts it is built from (its bound or default arguments, e.g. a context encoder's transition
    encoder) are probed first, so a broken part is named, not the whole. Raises ContractError
    naming the component, the kind, the promise and the fix."""
    entry = entry_of(target_of(factory))
    kind = kind or (entry.kind if entry else None)
    name = name or (f"@{entry.name}" if entry else getattr(factory, "__name__", repr(factory)))
    if kind not in CONTRACTS:
        raise ContractError(f"{name}: no contract for kind {kind!r}")
    for part, part_kind, part_name in parts_of(factory):
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
        values.update(gin.config._CONFIG.get((scope, selector), {}))
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


def check_parts(*parts: tuple[Callable[..., Any] | None, str, dict[str, Any]]) -> None:
    """`check` each (factory, kind, sizes) of a recipe's parts (None: a part the recipe left
    out), leaving the global random state as it was (a run's draws must not depend on it).
    The parts are built under the recipe's bindings, so a binding (a learning rate, a reward
    scale) can be what breaks a promise; the message says so."""
    under = "built with this run's bindings: one of them may be the cause"
    with torch.random.fork_rng(devices=[]):
        for factory, kind, sizes in parts:
            if factory is not None:
                check(factory, kind, under=under, **sizes)


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
    call = _callable(factory)
    return call(**{k: v for k, v in example.items() if k not in bound}, **kwargs)


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
    import gin.config

    entry = entry_of(target_of(factory))
    if entry is None:
        return set()
    scopes = list(getattr(factory, "scopes", []))
    found = set()
    for scope in ["", *("/".join(scopes[: i + 1]) for i in range(len(scopes)))]:
        found |= set(gin.config._CONFIG.get((scope, entry.gin_name), {}))
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
    if not torch.isfinite(value).all():
        raise Broken(f"return finite {what}", "it returned NaN or inf")
    return value


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
            raise Broken(f"make {key} finite", f"it is {float(term)}")
    return losses


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
