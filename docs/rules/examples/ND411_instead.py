import torch

import neurondev

step = torch.compile(lambda x: x.relu() * 2, backend="eager", dynamic=False)
with torch._dynamo.config.patch(recompile_limit=64), neurondev.watch() as watched:
    for size in range(1, 13):
        bucket = 8 if size <= 8 else 16
        step(torch.nn.functional.pad(torch.ones(size), (0, bucket - size)))  # two sizes in all: 8 and 16
print(watched.summary())
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
