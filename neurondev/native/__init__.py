"""The native device side (PyTorch's PrivateUse1 backends: TorchNeuron's ``neuron``, the host test device): dispatch-level accounting."""
