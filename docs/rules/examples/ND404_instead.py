import torch

import neurondev


def decode(token, cache, position):
    return cache.index_copy(0, position, token), token * 2  # a static cache: written in place of growing


compiled = torch.compile(decode, backend="eager", dynamic=False)
cache, position = torch.zeros(8, 4), torch.tensor([0])
with neurondev.watch() as watched:
    for _ in range(3):
        cache, _ = compiled(torch.ones(1, 4), cache, position)
        position += 1
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
