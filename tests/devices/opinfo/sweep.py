"""Run in a child process by tests/devices/test_opinfo.py: PyTorch's OpInfo samples on the host device, against the CPU.

    python sweep.py RESULTS.jsonl PROGRESS FIRST LAST

For each op of ``ops()`` from FIRST to LAST (indices) and each dtype it has on the CPU among float32, bf16, int64, bool
and complex64, its first samples run: on the CPU (the truth), on the host device, on the host device under each of
neurondev's accountings (the device's own log; the dispatcher's observer, its counts held against the log's), and with
the op made to fall back to the CPU (where it can), watched. Float32 samples also run backward, and backward watched.
Each case's outcome goes to RESULTS as one JSON line; PROGRESS holds the case about to run, so that a crash (the
process dying) is named by the parent.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from collections.abc import Iterator
from typing import Any

import torch

import neurondev
from neurondev.native.logged import LoggedAccounting
from neurondev.native.observer import observer_for

DTYPES = (torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.complex64)
SAMPLES = 2
# Ops whose CPU run is not the truth for another run: they read the clock, the memory, or an uninitialised buffer.
SKIP = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted", "item", "bernoulli", "multinomial"}
SKIP |= {"to_sparse"}  # the host device has no sparse layout (SparsePrivateUse1 kernels), as most out-of-tree devices have none
SKIP_PREFIXES = ("_refs.", "sparse.", "fft.", "linalg.", "special.", "nn.functional.dropout", "_segment", "nn.functional.feature_alpha")


def ops() -> list[Any]:
    """A broad slice of OpInfo: every op of op_db with a CPU kernel for one of DTYPES, the skipped ones aside, by name."""
    from torch.testing._internal.common_methods_invocations import op_db

    chosen = [op for op in op_db if op.name not in SKIP and not op.name.startswith(SKIP_PREFIXES) and _dtypes(op)]
    return sorted(chosen, key=lambda op: (op.name, op.variant_test_name))


def _dtypes(op: Any) -> list[torch.dtype]:
    supported = op.supported_dtypes("cpu")
    return [dtype for dtype in DTYPES if dtype in supported]


def name(op: Any) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def call(op: Any, sample: Any) -> Any:
    torch.manual_seed(0)
    return op(sample.input, *sample.args, **sample.kwargs)


def host(value: Any) -> Any:
    """A result as CPU values, comparable: tensors to the CPU (a conjugate resolved), the rest as it is."""
    if isinstance(value, torch.Tensor):
        return value.detach().resolve_conj().resolve_neg().cpu()
    if isinstance(value, (list, tuple)):
        return [host(item) for item in value]
    return value


def same(left: Any, right: Any) -> bool:
    """Equal values (NaN equal to NaN), dtypes and shapes; the CPU's kernels on the same memory give the same bits."""
    if isinstance(left, torch.Tensor) or isinstance(right, torch.Tensor):
        if not (isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor)) or (left.dtype, left.shape) != (
            right.dtype,
            right.shape,
        ):
            return False
        if left.dtype in (torch.complex32, torch.float8_e4m3fn, torch.float8_e5m2):  # no equal kernel: compare them wider
            left, right = left.to(torch.complex64 if left.is_complex() else torch.float32), right.to(left.dtype)
        return bool(torch.equal(left, right) or _nan_equal(left, right))
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right))
    return bool(left == right or (left != left and right != right))


def close(left: Any, right: Any) -> bool:
    """Equal within the dtype's tolerance (torch.testing's defaults): a path that orders float work otherwise."""
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(close(a, b) for a, b in zip(left, right))
    if not (isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor)):
        return same(left, right)
    try:
        torch.testing.assert_close(right, left, equal_nan=True, check_stride=False)
    except (AssertionError, RuntimeError, TypeError):
        return False
    return True


def verdict(expected: Any, got: Any) -> dict[str, bool]:
    return {"same": same(expected, got), "close": close(expected, got)}


def _nan_equal(left: torch.Tensor, right: torch.Tensor) -> bool:
    if not (left.is_floating_point() or left.is_complex()):
        return False
    return bool(torch.equal(torch.nan_to_num(left), torch.nan_to_num(right)) and torch.equal(left.isnan(), right.isnan()))


def samples(op: Any, device: Any, dtype: torch.dtype, *, requires_grad: bool) -> list[Any]:
    """The op's first samples made on ``device`` itself (as PyTorch's device tests make them: a view's storage is the
    device's), from the same seed as the CPU's."""
    torch.manual_seed(0)
    return list(itertools.islice(op.sample_inputs(device, dtype, requires_grad=requires_grad), SAMPLES))


def outcome(run: Any, *args: Any) -> tuple[str | None, Any]:
    """(the exception's type, None) when ``run(*args)`` raises, else (None, its result on the CPU)."""
    try:
        return None, host(run(*args))
    except Exception as error:
        return type(error).__name__, None


def gradients(op: Any, sample: Any) -> Any:
    """The gradients of the sample's tensors from the sum of the op's floating outputs (None: nothing to differentiate)."""
    inputs, args, kwargs = sample.input, sample.args, sample.kwargs
    leaves = [t for t in _tensors((inputs, args, kwargs)) if t.requires_grad]
    torch.manual_seed(0)
    outs = [t for t in _tensors(op(inputs, *args, **kwargs)) if t.requires_grad]
    if not leaves or not outs:
        return None
    total = sum(out.real.sum() if out.is_complex() else out.sum() for out in outs)
    grads = torch.autograd.grad(total, leaves, allow_unused=True)
    return [host(g) if g is not None else None for g in grads]


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
    elif hasattr(value, "input") and hasattr(value, "args"):  # a SampleInput
        yield from _tensors((value.input, value.args, value.kwargs))


@contextlib.contextmanager
def falling(op: Any) -> Iterator[bool]:
    """The op's ATen op made to fall back to the CPU on the device (False when it has none that can)."""
    try:
        neurondev.host_device(fallback=[f"aten::{op.aten_name}"])
        fell = True
    except neurondev.NeurondevError:
        fell = False
    try:
        yield fell
    finally:
        neurondev.host_device()


def cases(op: Any, dtype: torch.dtype, device: Any) -> Iterator[dict[str, Any]]:
    """Every variant of the op's first samples in ``dtype``, each against the CPU."""
    on_cpu, on_device = samples(op, "cpu", dtype, requires_grad=False), samples(op, device, dtype, requires_grad=False)
    for index, (truth, sample) in enumerate(zip(on_cpu, on_device)):
        base = {"op": name(op), "dtype": str(dtype).removeprefix("torch."), "sample": index}
        if not same(host(list(_tensors(truth))), host(list(_tensors(sample)))):
            yield {**base, "variant": "inputs", "cpu": None, "device": "the device's sample differs from the CPU's", "same": False}
            continue
        cpu_error, expected = outcome(call, op, truth)
        device_error, got = outcome(call, op, sample)
        yield {**base, "variant": "eager", "cpu": cpu_error, "device": device_error, **verdict(expected, got)}
        if device_error is not None:
            continue
        with LoggedAccounting("hostdev", _log()):
            error, watched = outcome(call, op, sample)
        yield {**base, "variant": "accounted log", "cpu": device_error, "device": error, **verdict(got, watched)}
        with watching() as counted:
            error, watched = outcome(call, op, sample)
        yield {**base, "variant": "accounted observer", "cpu": device_error, "device": error, **verdict(got, watched), **counted}
        with falling(op) as fell:
            if fell:
                with watching() as counted:
                    error, fallen = outcome(call, op, sample)
                yield {**base, "variant": "fallback", "cpu": cpu_error, "device": error, **verdict(expected, fallen), **counted}
    if dtype is torch.float32 and op.supports_autograd:
        grads = zip(samples(op, "cpu", dtype, requires_grad=True), samples(op, device, dtype, requires_grad=True))
        for index, (truth, sample) in enumerate(grads):
            base = {"op": name(op), "dtype": "float32", "sample": index, "variant": "backward"}
            cpu_error, expected = outcome(gradients, op, truth)
            device_error, got = outcome(gradients, op, sample)
            yield {**base, "cpu": cpu_error, "device": device_error, **verdict(expected, got)}
            if device_error is None:
                with watching() as counted:
                    error, watched = outcome(gradients, op, sample)
                yield {**base, "variant": "backward observed", "cpu": None, "device": error, **verdict(got, watched), **counted}


@contextlib.contextmanager
def watching() -> Iterator[dict[str, Any]]:
    """The dispatcher's observer on, and the device's own log beside it as the reference: inside, the case runs; after,
    ``counted`` says whether the observer counted what the log did (copies, bytes, syncs, fallbacks) and both counts."""
    counted: dict[str, Any] = {}
    with LoggedAccounting("hostdev", _log()) as reference, LoggedAccounting("hostdev", observer_for("hostdev")) as observed:
        reference.attributing = observed.attributing = False  # counted in C++ alone: no event is needed here
        yield counted
    ours, theirs = observed.counts(), reference.counts()
    counted.update(counted=ours == theirs, counts=None if ours == theirs else [str(ours), str(theirs)])


def _log() -> Any:
    from neurondev.native.events import DEVICE_LOGS

    return DEVICE_LOGS["hostdev"]


def main(results: str, progress: str, first: int, last: int) -> None:
    device = neurondev.host_device()
    chosen = ops()
    with open(results, "a", encoding="utf-8") as out:
        for position in range(first, min(last, len(chosen))):
            op = chosen[position]
            for dtype in _dtypes(op):
                with open(progress, "w", encoding="utf-8") as mark:
                    mark.write(json.dumps({"position": position, "op": name(op), "dtype": str(dtype).removeprefix("torch.")}))
                try:
                    for case in cases(op, dtype, device):
                        out.write(json.dumps(case) + "\n")
                except Exception as error:  # the sweep's own failure on this op: a finding, never the end of the sweep
                    failed = {"op": name(op), "dtype": str(dtype), "variant": "sweep", "cpu": None, "device": repr(error)[:200]}
                    out.write(json.dumps({**failed, "same": False, "close": False}) + "\n")
                out.flush()
    with open(progress, "w", encoding="utf-8") as mark:
        mark.write(json.dumps({"position": last, "done": True}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
