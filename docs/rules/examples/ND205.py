import torch

import neurondev


def embed(ids, weight):
    return torch.nn.functional.embedding(ids, weight)


device = neurondev.host_device(fallback=["aten::index_select"])  # the host test device, index_select left to the CPU
ids, weight = torch.tensor([1, 2]), torch.randn(4, 8)
neurondev.check(embed, ids, weight, target=device, fallbacks="error")
