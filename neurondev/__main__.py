"""python -m neurondev: the neurondev command."""

import sys

from .cli import main

sys.exit(main())
