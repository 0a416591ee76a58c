import torch

import neurondev

step = torch.compile(lambda x, lr: x * lr, backend="eager", dynamic=False)
lr = torch.tensor(0.1)
with torch._dynamo.config.patch(recompile_limit=2), neurondev.watch() as watched:
    for value in (0.1, 0.2, 0.3, 0.4):
        lr.fill_(value)  # the cause removed: nothing to recompile
        step(torch.ones(4), lr)
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
