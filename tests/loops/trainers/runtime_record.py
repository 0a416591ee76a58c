"""The runtime's own counts, written down by the trainer scripts before each call of their compiled model and once at
the end: dynamo's graphs (its counters) and its compile seconds (compile_times' record), torch_xla's programs and their
compile seconds (its CompileTime metric) or the host device's copies (its own log). A watch's steps are checked against them: a step is from one call to the next."""

import json

__all__ = ["counts", "print_record", "record_each_call"]

_BEFORE_EACH_CALL: list[dict] = []


def counts(backend: str) -> dict:
    """The runtime's counts so far: dynamo's, and torch_xla's (backend 'openxla') or the host device's."""
    from torch._dynamo.utils import compilation_time_metrics, counters

    found = {
        "graphs": counters["stats"]["unique_graphs"],
        "dynamo_seconds": sum(compilation_time_metrics.get("_compile.compile_inner", [])),
    }
    if backend == "openxla":
        import torch_xla.debug.metrics as metrics

        compiled = metrics.metric_data("CompileTime") or (0, 0.0)
        found["xla_compiles"], found["xla_compile_seconds"] = compiled[0], compiled[1] / 1e9
    else:
        from neurondev.devices.host.loader import extension

        log = extension().events(0)
        for direction in ("to_device", "to_host"):
            found[direction] = sum(kind == "copy" and not op and way == direction for kind, op, way, _ in log)
    return found


def record_each_call(module, backend: str) -> None:
    """Write the counts down before each call of ``module`` (a forward pre-hook: outside the compiled code)."""
    module.register_forward_pre_hook(lambda _module, _args: _BEFORE_EACH_CALL.append(counts(backend)))


def print_record(backend: str) -> None:
    """One line: 'runtime: ' and the counts before each call and after the last, as JSON."""
    print("runtime:", json.dumps({"before_each_call": _BEFORE_EACH_CALL, "after": counts(backend)}))
