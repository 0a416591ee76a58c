import torch

import neurondev

step = torch.compile(lambda x: x.relu() * 2, backend="eager", dynamic=False)
with torch._dynamo.config.patch(recompile_limit=64), neurondev.watch() as watched:
    for size in range(2, 26, 2):
        step(torch.ones(size))  # a new size every step, never marked dynamic: the loop never settles
print(watched.summary())
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
