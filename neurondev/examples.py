"""``neurondev.examples``: the gallery's public face (``list()``, ``get(name)``)."""

from neurondev.gallery.catalogue import CATALOGUE, Example, Outcome, collective_function, get, gloo_group, list, seed_function

__all__ = ["CATALOGUE", "Example", "Outcome", "collective_function", "get", "gloo_group", "list", "seed_function"]
