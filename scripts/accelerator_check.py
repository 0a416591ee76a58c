"""neurondev's native accounting on a real accelerator (CUDA), against the runtime's own record; prints what it measured.

Each case is a line of a program that copies between host and device or syncs, run eagerly and compiled
(aot_autograd's graphs run node by node, the way neurondev runs a program on a device without a compiler of
its own), each call measured three ways at once:

* neurondev's accounting (``NativeDriver``): copies to the host and to the device, syncs, each with its line;
* torch.profiler's CUDA activity: every ``Memcpy DtoH`` and ``Memcpy HtoD`` the device ran (a host read such
  as ``.item()`` is a device-to-host copy too);
* PyTorch's own sync check, ``torch.cuda.set_sync_debug_mode("warn")``: one warning per synchronizing call.

Then the accounting's cost (the dispatcher's observer) on a GPT-2 of GPT-2 small's width against plain torch and
against torch.profiler's own sight of every op with its shapes. Where no CUDA device is present it says so and exits 0: no
device is ever faked (``--host`` rehearses the same cases on neurondev's host test device). On a machine with a GPU:

    python3 scripts/accelerator_check.py
"""

from __future__ import annotations

import functools
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout, when neurondev is not installed

# the suite's copy and sync cases (measured there on the host device against its log and torch.profiler)
from tests.native.test_runtime_record import (  # noqa: E402
    into_host_tensor,
    item,
    literal,
    mask_index,
    masked_select,
    nonzero,
    to_host,
    truth,
    upload,
)


def row_index(x):
    return x[torch.tensor([0, 2], device=x.device)]  # an upload, and no sync: the result's size is known


CASES = (to_host, into_host_tensor, upload, literal, item, truth, nonzero, masked_select, mask_index, row_index)


def measured(call: Callable[[], object], driver, *, compiled: bool) -> tuple[object, int, int, int]:
    """(neurondev's counts, the profiler's DtoH and HtoD copies, the sync warnings) of one call."""
    from torch.profiler import ProfilerActivity, profile

    cuda = driver.device().type == "cuda"
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
    driver.settle()
    whole = compiled and driver.needs_counting_call
    with warnings.catch_warnings(record=True) as caught, profile(activities=activities) as prof:
        warnings.simplefilter("always")
        if cuda:
            torch.cuda.set_sync_debug_mode("warn")
        try:
            with driver.measuring(compiled=compiled, whole=whole):
                before = driver.counts()
                call()
                driver.settle()
                counts = driver.counts() - before
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode(0)
    names = [event.name for event in prof.events()]
    down = sum(name.startswith("Memcpy DtoH") for name in names)
    up = sum(name.startswith("Memcpy HtoD") for name in names)
    syncs = sum("synchronizing" in str(w.message).lower() for w in caught)
    return counts, down, up, syncs


def check_cases(device: torch.device) -> None:
    from neurondev.native.device import NativeDriver

    print("case              mode      neurondev: to host / to device / syncs (lines)   profiler: DtoH / HtoD   sync warnings")
    for case in CASES:
        for compiled in (False, True):
            driver = NativeDriver(device)
            x = torch.randn(4, 8).to(device)
            fn = torch.compile(case, backend=driver.program_backend()) if compiled else case
            with driver.measuring(compiled=True, whole=compiled and driver.needs_counting_call):
                fn(x)  # warm up (compiles)
            mark = driver.mark()
            counts, down, up, syncs = measured(functools.partial(fn, x), driver, compiled=compiled)
            lines = sorted({f"{e.kind}@{e.line}" for e in driver.accounting.events[mark:]})
            ours = f"{counts.transfers_to_host} / {counts.transfers_to_device} / {counts.syncs}"
            print(
                f"{case.__name__:<17} {'compiled' if compiled else 'eager':<9} {ours:<18} {', '.join(lines)[:48]:<48} {down} / {up}{'':<14}{syncs}"
            )
            torch._dynamo.reset()


def written_out(x):
    out = torch.empty(x.shape, device="cpu")  # the host, written out
    out.copy_(torch.relu(x) * 2)
    return out, torch.arange(x.shape[-1]).to(x.device) + x


def clean(x):
    return torch.relu(x) * 2 + x.sum()


def explained(device: torch.device) -> None:
    """explain and the strict check with the device as target: each copy site with its line, no fallback."""
    import neurondev

    ex = neurondev.explain(written_out, torch.randn(64), target=device, quiet=True)
    table = ex.transfer_table()
    print(f"explain on {device}: runtime {ex.runtime.get('device')} ({ex.runtime.get('reason')})")
    for row in table.itertuples():
        print(f"  {row.scenario:<38} {row.direction:<10} {row.calls} x {row.bytes} bytes at line {row.line} ({row.what})")
    print(f"  as written: {neurondev.describe(ex.program.as_written)}")
    neurondev.check(clean, torch.randn(64), target=device, fallbacks="error")
    print("  check(clean, fallbacks='error'): passes (no pin, no op fell back)")


def bench(device: torch.device) -> None:
    from neurondev.gallery.models import tiny_gpt2
    from neurondev.native.logged import LoggedAccounting
    from neurondev.native.observer import observer_for

    model, args, kwargs = tiny_gpt2(hidden=768, heads=12, sequence=128, vocab=2000)
    model = model.to(device)
    ids = args[0].to(device)

    settle = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def timed(side) -> float:
        settle()
        start = time.perf_counter()
        with torch.no_grad():
            for _ in range(20):
                if side is None:
                    model(ids, **kwargs)
                else:
                    with side():
                        model(ids, **kwargs)
        settle()
        return time.perf_counter() - start

    profiler = functools.partial(torch.profiler.profile, activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True)
    sides = {"plain": None, "profiler": profiler, "accounted": lambda: LoggedAccounting(device.type, observer_for(device.type))}
    for side in sides.values():
        timed(side)
    best = {name: min(timed(side) for _ in range(5)) for name, side in sides.items()}
    print(
        f"gpt2 768 on {device}: plain {best['plain'] / 20 * 1e3:.2f} ms/call, profiler {best['profiler'] / 20 * 1e3:.2f}, "
        f"accounted {best['accounted'] / 20 * 1e3:.2f}; accounted/plain {best['accounted'] / best['plain']:.2f} (target <= 1.1), "
        f"accounted/profiler {best['accounted'] / best['profiler']:.2f}"
    )


def main(argv: list[str]) -> int:
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}")
    if "--host" in argv:  # a rehearsal on neurondev's host test device (host memory: no profiler copies, no sync check)
        import neurondev

        device = neurondev.host_device()
    elif not torch.cuda.is_available():
        print("no CUDA device is present here: nothing measured (neurondev's host test device is tested by the suite)")
        return 0
    else:
        device = torch.device("cuda", 0)
        print(f"device {device}: {torch.cuda.get_device_name(device)}")
    check_cases(device)
    explained(device)
    try:
        bench(device)
    except ImportError as error:
        print(f"benchmark skipped: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
