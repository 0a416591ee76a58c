import torch

import neurondev


def decode(token, cache):
    return torch.cat([cache, token]), token * 2  # the cache grows by one each call


compiled = torch.compile(decode, backend="eager", dynamic=False)
cache = torch.zeros(1, 4)
with neurondev.watch() as watched:
    for _ in range(3):
        cache, _ = compiled(torch.ones(1, 4), cache)
print(watched.summary())
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
