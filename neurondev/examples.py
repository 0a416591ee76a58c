"""``neurondev.examples``: the gallery's public face (``list()``, ``get(name)``)."""

from neurondev.gallery.catalogue import *  # noqa: F403
from neurondev.gallery.catalogue import __all__
