"""The user's objects are untouched, bit for bit, by capture, explain, check and compare_traces,
whatever kind of argument carries the state a function changes: tensors, containers, dataclasses,
modules (BatchNorm statistics), an optimizer stepping a model, a callable object's own state, a
KV-cache-like object that grows; and the global random state is given back."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neurondev

pytestmark = pytest.mark.xla


@dataclasses.dataclass
class Batch:
    x: torch.Tensor
    seen: int = 0


class Cache:
    """Grows by one entry per call, as a transformers KV cache does."""

    def __init__(self) -> None:
        self.keys: list[torch.Tensor] = [torch.zeros(2, 4)]

    def update(self, key: torch.Tensor) -> torch.Tensor:
        self.keys.append(key)
        return torch.cat(self.keys)


class Counter:
    """A callable object whose call changes its own state."""

    def __init__(self) -> None:
        self.total = torch.zeros(4)
        self.calls = 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        self.total += x
        self.calls += 1
        return self.total * torch.ones(4, device=x.device)


def tensor_case():
    def fn(x):
        x.add_(1)
        return x * torch.ones(4, device=x.device)

    return fn, (torch.randn(4),)


def containers_case():
    def fn(items, table):
        items[0].mul_(2)
        items.append(torch.ones(1))
        table["w"].add_(1)
        table["new"] = 1
        return items[0] + table["w"] + torch.zeros(4, device=items[0].device)

    return fn, ([torch.randn(4)], {"w": torch.randn(4)})


def dataclass_case():
    def fn(batch):
        batch.x.add_(1)
        batch.seen += 1
        return batch.x * torch.ones(4, device=batch.x.device)

    return fn, (Batch(torch.randn(4)),)


def module_argument_case():
    def fn(model, x):
        return model(x) + torch.zeros(4, device=x.device)

    return fn, (torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).train(), torch.randn(8, 4))


def training_step_case():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def fn(model, optimizer, x):
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        return loss.detach() + torch.zeros(1, device=x.device)

    return fn, (model, optimizer, torch.randn(8, 4))


def cache_case():
    def fn(x, cache):
        return cache.update(x * 2) + torch.zeros(1, 4, device=x.device)

    return fn, (torch.randn(2, 4), Cache())


def callable_object_case():
    return Counter(), (torch.randn(4),)


def random_case():
    def fn(x):
        return x + torch.rand(4, device=x.device)

    return fn, (torch.randn(4),)


CASES = {
    "tensor": tensor_case,
    "containers": containers_case,
    "dataclass": dataclass_case,
    "module-argument": module_argument_case,
    "training-step": training_step_case,
    "cache": cache_case,
    "callable-object": callable_object_case,
    "random": random_case,
}


def _explain(fn, *args):
    return neurondev.explain(fn, *args, quiet=True)


def _check(fn, *args):
    try:
        return neurondev.check(fn, *args)
    except neurondev.DevicePinsError:
        return None


ENTRY_POINTS = {"capture": neurondev.capture, "explain": _explain, "check": _check, "compare_traces": neurondev.compare_traces}


def snapshot(value: Any, depth: int = 0) -> Any:
    """Everything a user could observe of ``value``, as plain data and tensor copies."""
    if isinstance(value, torch.Tensor):
        grad = None if value.grad is None else value.grad.clone()
        return ("tensor", value.detach().clone(), value.requires_grad, grad, str(value.device))
    if depth > 6 or value is None or isinstance(value, (int, float, str, bool)):
        return value
    if isinstance(value, torch.nn.Module):
        return ("module", value.training, snapshot(value.state_dict(keep_vars=True), depth + 1))
    if isinstance(value, torch.optim.Optimizer):
        return ("optimizer", snapshot(copy.deepcopy(value.state_dict()), depth + 1))
    if isinstance(value, (list, tuple)):
        return [snapshot(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {key: snapshot(item, depth + 1) for key, item in value.items()}
    if hasattr(value, "__dict__"):
        return (type(value).__name__, snapshot(vars(value), depth + 1))
    return repr(value)


def assert_same(before: Any, after: Any) -> None:
    if isinstance(before, tuple) and before and before[0] == "tensor":
        assert after[0] == "tensor" and _grads_equal(before, after)
        assert torch.equal(before[1], after[1]) and str(before[1].dtype) == str(after[1].dtype)
        return
    if isinstance(before, (list, tuple)):
        assert type(before) is type(after) and len(before) == len(after)
        for a, b in zip(before, after):
            assert_same(a, b)
        return
    if isinstance(before, dict):
        assert before.keys() == after.keys()
        for key in before:
            assert_same(before[key], after[key])
        return
    assert before == after


def _grads_equal(before: tuple, after: tuple) -> bool:
    (_, _, needs_before, grad_before, device_before), (_, _, needs_after, grad_after, device_after) = before, after
    same_grad = (grad_before is None) == (grad_after is None) and (grad_before is None or torch.equal(grad_before, grad_after))
    return needs_before == needs_after and device_before == device_after and same_grad


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(sorted(CASES)), entry=st.sampled_from(sorted(ENTRY_POINTS)))
def test_the_users_objects_and_random_state_are_untouched(case, entry):
    torch.manual_seed(0)
    fn, args = CASES[case]()
    before = snapshot((fn, args))
    rng = torch.get_rng_state()
    ENTRY_POINTS[entry](fn, *args)
    assert_same(before, snapshot((fn, args)))
    assert torch.equal(rng, torch.get_rng_state())


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_kind_of_argument_through_explain(case):
    fn, args = CASES[case]()
    before = snapshot((fn, args))
    _explain(fn, *args)
    assert_same(before, snapshot((fn, args)))


@pytest.mark.slow
def test_a_transformers_kv_cache_passed_as_cache_does_not_grow():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 100, (1, 4))
    cache = transformers.DynamicCache(config=config)
    with torch.no_grad():
        model(ids, cache=cache, use_cache=True)
    before = (cache.get_seq_length(), snapshot(cache))
    ex = neurondev.explain(model, ids[:, :1], cache=cache, use_cache=True, quiet=True)
    assert ex.xla_matches_cpu is True  # each run compared as its first call left the cache (4 + 1 positions), never after its second
    neurondev.compare_traces(model, ids[:, :1], cache=cache, use_cache=True)
    assert cache.get_seq_length() == before[0] == 4
    assert_same(before[1], snapshot(cache))
