"""Run by torchrun: two training steps of a small model under DDP, then under FSDP2, on 'cpu' or 'hostdev' (argv[1]);
rank r saves each wrapper's losses and first weight to argv[2].r."""

import os
import sys

import torch
import torch.distributed as dist

import neurondev

kind, out = sys.argv[1], sys.argv[2]
device = neurondev.host_device() if kind == "hostdev" else torch.device("cpu")
dist.init_process_group()
rank, size = dist.get_rank(), dist.get_world_size()


def trained_with(wrapper):
    """Two steps of the model under ``wrapper``: its losses, its first weight and that weight's device."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(device)
    if wrapper == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        trained = DistributedDataParallel(model)
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh(device.type, (size,))
        for layer in (model[0], model[2]):
            fully_shard(layer, mesh=mesh)
        trained = fully_shard(model, mesh=mesh)
    optimizer = torch.optim.SGD(trained.parameters(), lr=0.1)
    batches = torch.Generator().manual_seed(rank)
    losses = []
    for _ in range(2):
        x, y = torch.randn(4, 8, generator=batches).to(device), torch.randn(4, 1, generator=batches).to(device)
        loss = torch.nn.functional.mse_loss(trained(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().cpu())
    weight = model[0].weight
    weight = weight.full_tensor() if hasattr(weight, "full_tensor") else weight
    return {"losses": torch.stack(losses), "weight": weight.detach().cpu(), "device": weight.device.type}


torch.save({wrapper: trained_with(wrapper) for wrapper in ("ddp", "fsdp2")}, f"{out}.{rank}")
dist.barrier()  # every rank done before the group goes: a rank torn down mid-exchange aborts the other (torch 2.13, gloo)
dist.destroy_process_group()
sys.stdout.flush()
os._exit(0)  # what is tested is the values above: torch 2.13's gloo can abort a DDP job at exit (tests/cli/test_watch_faults.py)
