import torch

import neurondev


def embed(ids, weight):
    return torch.nn.functional.one_hot(ids, weight.shape[0]).to(weight.dtype) @ weight  # a matmul the device has


device = neurondev.host_device(fallback=["aten::index_select"])
ids, weight = torch.tensor([1, 2]), torch.randn(4, 8)
neurondev.check(embed, ids, weight, target=device, fallbacks="error")
