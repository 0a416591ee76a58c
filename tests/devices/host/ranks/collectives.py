"""Run by torchrun: each collective on CPU tensors (through a gloo group: the truth) and on the host device's (through
the default group, which init_process_group() gives the host device's backend unnamed), in float32, bf16 and int64,
blocking and with async_op=True, and the point-to-point exchanges of a pipeline (isend/irecv in a ring,
batch_isend_irecv) and of MoE routing (all_to_all, all_to_all_single with uneven splits); rank r saves each device's
results to argv[1].r. Every tensor is contiguous: gloo's values for a strided tensor are wrong (measured), so the CPU
side is the truth only on contiguous ones."""

import sys

import torch
import torch.distributed as dist

import neurondev

out = sys.argv[1]
host_device = neurondev.host_device()
dist.init_process_group()  # no backend named: c10d picks one for the process's accelerator
rank, size = dist.get_rank(), dist.get_world_size()
gloo = dist.new_group(backend="gloo")
saved = {"backend": str(dist.get_backend_config()), "unnamed": dist.get_backend()}
saved["named"] = {"cpu": dist.get_backend(gloo), "hostdev": dist.get_backend(dist.new_group(backend="hostdev"))}
kind, device, group = "cpu", torch.device("cpu"), gloo  # the side running now
results: dict = {}


def on(values, dtype):
    return values.to(dtype).to(device)


def collectives(dtype, name, async_op):
    """The collectives, in ``dtype``, their results under ``name``."""

    def done(work):
        if async_op:
            work.wait()

    x = on(torch.arange(6.0) * (rank + 1), dtype)
    done(dist.all_reduce(x, group=group, async_op=async_op))
    results[f"all_reduce {name}"] = x

    gathered = [on(torch.zeros(3), dtype) for _ in range(size)]
    done(dist.all_gather(gathered, on(torch.full((3,), float(rank)), dtype), group=group, async_op=async_op))
    results[f"all_gather {name}"] = torch.stack(gathered)

    into = on(torch.zeros(3 * size), dtype)
    done(dist.all_gather_into_tensor(into, on(torch.full((3,), float(rank) + 2), dtype), group=group, async_op=async_op))
    results[f"all_gather_into_tensor {name}"] = into

    scattered = on(torch.zeros(2), dtype)
    done(
        dist.reduce_scatter(
            scattered, [on(torch.full((2,), float(rank * size + i)), dtype) for i in range(size)], group=group, async_op=async_op
        )
    )
    results[f"reduce_scatter {name}"] = scattered

    single = on(torch.zeros(2), dtype)
    done(dist.reduce_scatter_tensor(single, on(torch.arange(2.0 * size) * (rank + 1), dtype), group=group, async_op=async_op))
    results[f"reduce_scatter_tensor {name}"] = single

    sent = on(torch.full((4,), float(rank)), dtype)
    done(dist.broadcast(sent, src=size - 1, group=group, async_op=async_op))
    results[f"broadcast {name}"] = sent

    # MoE routing: rank r sends r + i + 1 rows to rank i (uneven), each row its sender's rank and its index
    splits_in = [rank + i + 1 for i in range(size)]
    splits_out = [i + rank + 1 for i in range(size)]
    rows = on(torch.arange(float(sum(splits_in))) + 100 * rank, dtype)
    routed = on(torch.zeros(sum(splits_out)), dtype)
    done(dist.all_to_all_single(routed, rows, splits_out, splits_in, group=group, async_op=async_op))
    results[f"all_to_all_single {name}"] = routed

    pieces = [on(torch.zeros(2), dtype) for _ in range(size)]
    parts = [on(torch.full((2,), float(10 * rank + i)), dtype) for i in range(size)]
    try:
        done(dist.all_to_all(pieces, parts, group=group, async_op=async_op))
    except RuntimeError as error:  # gloo on torch 2.9 has no list form: the same exchange, flat, is the CPU's truth
        if kind != "cpu" or "does not support alltoall" not in str(error):
            raise
        flat = on(torch.zeros(2 * size), dtype)
        dist.all_to_all_single(flat, torch.cat(parts), group=group)
        pieces = list(flat.split(2))
    results[f"all_to_all {name}"] = torch.stack(pieces)


def ring(dtype, name):
    """A pipeline schedule's exchange: isend to the next rank and irecv from the previous, both posted before either is
    waited on; then the same as batch_isend_irecv."""
    following, previous = (rank + 1) % size, (rank - 1) % size
    sent, came = on(torch.full((3,), float(rank + 1)), dtype), on(torch.zeros(3), dtype)
    works = [dist.isend(sent, following, group=group), dist.irecv(came, previous, group=group)]
    for work in works:
        work.wait()
    results[f"isend/irecv {name}"] = came
    again = on(torch.zeros(3), dtype)
    ops = [dist.P2POp(dist.isend, sent * 2, following, group), dist.P2POp(dist.irecv, again, previous, group)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    results[f"batch_isend_irecv {name}"] = again


for kind, device, group in (("cpu", torch.device("cpu"), gloo), ("hostdev", host_device, None)):  # noqa: B007 - the functions above read the side running now
    results = {}
    for dtype in (torch.float32, torch.bfloat16, torch.int64):
        name = str(dtype).removeprefix("torch.")
        collectives(dtype, name, async_op=False)
        collectives(dtype, f"{name} async", async_op=True)
        ring(dtype, name)
    dist.barrier()
    results["devices"] = sorted({t.device.type for t in results.values() if isinstance(t, torch.Tensor)})
    saved[kind] = {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in results.items()}

torch.save(saved, f"{out}.{rank}")
dist.barrier()  # every rank done before the group goes: a rank torn down mid-exchange aborts the other (torch 2.13, gloo)
dist.destroy_process_group()
