"""torch.fx passes that neurondev applies to graphs traced on CPU."""

from neurondev.passes.device_rewriter import DeviceRewriterPass, Rewrite, rewrite_copy

__all__ = ["DeviceRewriterPass", "Rewrite", "rewrite_copy"]
