import torch

import neurondev


def next_token(input_ids):
    return (input_ids * 3 + 1)[:, -1:]  # a stand-in for a model's forward


compiled = torch.compile(next_token, backend="eager", dynamic=False)
with neurondev.watch() as watched:
    input_ids = torch.ones(1, 6, dtype=torch.long)  # the prompt
    for _ in range(4):
        input_ids = compiled(input_ids)  # then one token a step, as generate() does
print(watched.summary())
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
