import torch

import neurondev


def step(x, training):
    return torch.dropout(x, 0.1, training)  # a bool: one graph per value


compiled = torch.compile(step, backend="eager")
with neurondev.watch() as watched:
    for training in (True, False, True, False):
        compiled(torch.ones(4), training)
print(watched.summary())
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
