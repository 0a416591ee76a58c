"""The options of explain and check: checked once, passed along as one value, never hiding the user's own."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any, TypeVar, cast

import torch

from neurondev.errors import InvalidOptionError, InvalidTargetError, NeurondevError, OptionShadowsArgumentError, XlaUnavailableError
from neurondev.runs.values import check_tolerances
from neurondev.trace.capture import check_level
from neurondev.trace.source import display_name

__all__ = ["ExplainOptions", "check_target", "default", "given", "refuse_shadowing", "value_of"]

T = TypeVar("T")


class _Unset:
    """A default that remembers it was not given; it reads as the default's value (for help())."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def default(value: T) -> T:
    """An option's default, told apart from the same value passed on purpose."""
    return cast(T, _Unset(value))


def given(value: object) -> bool:
    return not isinstance(value, _Unset)


def value_of(value: T) -> T:
    return cast(T, value.value) if isinstance(value, _Unset) else value


def refuse_shadowing(fn: Any, options: Mapping[str, object], *, verb: str) -> None:
    """OptionShadowsArgumentError when an option was given whose name ``fn`` itself takes: the value
    would go to neurondev, never to ``fn``. explain's two-step form keeps them apart; for check,
    bind the function's own argument first."""
    clashing = [name for name, value in options.items() if given(value) and name in _parameters(fn)]
    if not clashing:
        return
    name = clashing[0]
    if verb == "explain":
        instead = f"give explain's options first and your inputs after: neurondev.explain(fn, {name}=...)(inputs..., {name}=...)"
    else:
        instead = f"bind your own first: neurondev.{verb}(functools.partial(fn, {name}=...), inputs...)"
    raise OptionShadowsArgumentError(
        f"{display_name(fn)} takes its own {name!r} argument, and {verb}'s option {name}= would take it; {instead}"
    )


def _parameters(fn: Any) -> set[str]:
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExplainOptions:
    """The options of one explain call, checked once and passed along as one value."""

    target: torch.device = dataclasses.field(kw_only=False)
    run: bool = True
    quiet: bool = False
    rtol: float | None = None
    atol: float | None = None
    native: bool = False
    level: str = "dynamo"
    program: bool = True
    fixes: bool = True

    @classmethod
    def checked(
        cls, target: Any, *, run: Any, quiet: Any, rtol: Any, atol: Any, native: Any, level: Any, program: Any = None
    ) -> ExplainOptions:
        """The options, each checked; ``program`` defaults to ``run`` (the graph runs and the program runs
        go together in explain; check asks for the program alone)."""
        target, run, quiet, rtol, atol, native, level = (value_of(v) for v in (target, run, quiet, rtol, atol, native, level))
        program = run if program is None else value_of(program)
        for name, value in (("run", run), ("quiet", quiet), ("native", native), ("program", program)):
            if not isinstance(value, bool):
                raise InvalidOptionError(f"{name} is True or False, got {value!r}")
        check_tolerances(rtol, atol)
        target = check_target(resolved(target))
        return cls(target, run=run, quiet=quiet, rtol=rtol, atol=atol, native=native, level=check_level(level), program=program)


def resolved(target: Any) -> torch.device:
    """The target as a device, by ``devices.runtimes.resolve_target`` (None: this machine's runtime's device)."""
    from neurondev.devices.runtimes import resolve_target

    return resolve_target(target)


def check_target(target: torch.device) -> torch.device:
    """The target of explain: an XLA device that exists here (when the XLA runtime can tell), the native
    device of the PrivateUse1 backend loaded in this process (TorchNeuron's ``neuron``, the host test device),
    or a CUDA device torch sees; an index the process does not have is refused.

    explain runs graphs on the device, so its pins are rewritten for it; another device (``meta``, ``cpu``,
    a CUDA device on a machine without one) would give a graph for somewhere the runs never go.
    """
    from neurondev.devices.drivers import native_device_count, stack_of

    try:
        stack = stack_of(target)
    except NeurondevError as error:
        why = f"{error}; " if target.type == "cuda" else ""
        raise InvalidTargetError(
            f"explain rewrites device pins for the device it runs the graphs on, got target {str(target)!r}; {why}pass target='xla' "
            "(or 'xla:N'), a native device ('neuron' with TorchNeuron, 'hostdev' for the host test device, 'cuda'), or None for this "
            f"machine's own. To rewrite a graph for another device, use neurondev.DeviceRewriterPass(target={str(target)!r}) on the graph itself"
        ) from None
    if stack == "native":
        from neurondev.native.choice import chosen

        chosen()  # NEURONDEV_ACCOUNTING names an accounting that exists, before anything runs
    if stack == "native" and target.index is not None:
        count = native_device_count(target.type)
        if count is not None and target.index >= count:
            have = ", ".join(f"{target.type}:{i}" for i in range(count))
            raise InvalidTargetError(
                f"target {str(target)!r} does not exist here: this process has {have}; pass one of those, or {target.type!r}"
            )
    if stack == "xla" and target.index is not None:
        from neurondev import xla

        try:
            count = xla.device_count()
        except XlaUnavailableError:
            return target  # no runtime to ask: the runs are skipped and say why
        if target.index >= count:
            have = ", ".join(f"xla:{i}" for i in range(count))
            raise InvalidTargetError(
                f"target {str(target)!r} does not exist here: this XLA runtime has {have}; pass one of those, or 'xla'"
            )
    return target
