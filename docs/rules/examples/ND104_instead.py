import torch

import neurondev

namespace = {"torch": torch}
exec("def scaled(x):\n    out = x.new_empty(64)\n    out.copy_(x * 2)\n    return out\n", namespace)

neurondev.check(namespace["scaled"], torch.randn(64))
