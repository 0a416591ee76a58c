"""Run by torchrun: each collective on tensors of the device named by argv[1] ('cpu' or 'hostdev'); rank r saves its results to argv[2].r."""

import sys

import torch
import torch.distributed as dist

import neurondev

kind, out = sys.argv[1], sys.argv[2]
device = neurondev.host_device() if kind == "hostdev" else torch.device("cpu")
dist.init_process_group()  # no backend named: c10d picks one for the process's accelerator
rank, size = dist.get_rank(), dist.get_world_size()
results = {"backend": str(dist.get_backend_config())}

x = torch.arange(6.0, device=device) * (rank + 1)
dist.all_reduce(x)
results["all_reduce"] = x

gathered = [torch.empty(3, device=device) for _ in range(size)]
dist.all_gather(gathered, torch.full((3,), float(rank), device=device))
results["all_gather"] = torch.stack(gathered)

into = torch.empty(3 * size, device=device)
dist.all_gather_into_tensor(into, torch.full((3,), float(rank) + 0.5, device=device))
results["all_gather_into_tensor"] = into

scattered = torch.empty(2, device=device)
dist.reduce_scatter(scattered, [torch.full((2,), float(rank * size + i), device=device) for i in range(size)])
results["reduce_scatter"] = scattered

single = torch.empty(2, device=device)
dist.reduce_scatter_tensor(single, torch.arange(2.0 * size, device=device) * (rank + 1))
results["reduce_scatter_tensor"] = single

sent = torch.full((4,), float(rank), device=device)
dist.broadcast(sent, src=size - 1)
results["broadcast"] = sent

dist.barrier()
results["devices"] = sorted({t.device.type for t in results.values() if isinstance(t, torch.Tensor)})
torch.save({k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in results.items()}, f"{out}.{rank}")
dist.barrier()  # every rank done before the group goes: a rank torn down mid-exchange aborts the other (torch 2.13, gloo)
dist.destroy_process_group()
