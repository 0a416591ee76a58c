import torch

import neurondev


def next_token(input_ids):
    return (input_ids * 3 + 1)[:, -1:]


prefill = torch.compile(next_token, backend="eager", dynamic=False)  # the prompt's graph
decode = torch.compile(lambda ids: next_token(ids), backend="eager", dynamic=False)  # and the token's, apart
with neurondev.watch() as watched:
    input_ids = prefill(torch.ones(1, 6, dtype=torch.long))
    for _ in range(3):
        input_ids = decode(input_ids)
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
