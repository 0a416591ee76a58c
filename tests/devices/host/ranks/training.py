"""Run by torchrun: two training steps of a small model under DDP or FSDP2 (argv[1]) on 'cpu' or 'hostdev'
(argv[2]); rank r saves its losses and first weight to argv[3].r."""

import os
import sys

import torch
import torch.distributed as dist

import neurondev

wrapper, kind, out = sys.argv[1], sys.argv[2], sys.argv[3]
device = neurondev.host_device() if kind == "hostdev" else torch.device("cpu")
dist.init_process_group()
rank, size = dist.get_rank(), dist.get_world_size()
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
torch.save({"losses": torch.stack(losses), "weight": weight.detach().cpu(), "device": weight.device.type}, f"{out}.{rank}")
dist.barrier()  # every rank done before the group goes: a rank torn down mid-exchange aborts the other (torch 2.13, gloo)
dist.destroy_process_group()
sys.stdout.flush()
os._exit(0)  # what is tested is the values above: torch 2.13's gloo can abort a DDP job at exit (tests/cli/test_watch_faults.py)
