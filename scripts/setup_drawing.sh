#!/usr/bin/env bash
# The drawing step of the setup: make sure a Graphviz `dot` can draw, without root if need be.
# A system dot (Debian's graphviz, installed by setup.sh as root) is used as it is. Without one,
# the pip-only graphviz-pure wheel goes into the venv and `VENV/bin/dot` points at it, so the
# python `graphviz` package finds it on the venv's PATH; neurondev itself finds graphviz-pure
# beside the venv's python (`neurondev doctor` says which dot draws).
set -euo pipefail
venv=${1:?usage: setup_drawing.sh VENV}

if command -v dot >/dev/null 2>&1 && [ "$(command -v dot)" != "$venv/bin/dot" ]; then
    exit 0
fi
if [ ! -x "$venv/bin/graphviz-pure" ]; then
    echo "setup: no system dot and no root for apt-get: installing the pip-only graphviz-pure into $venv"
    "$venv/bin/python" -m pip install --quiet 'graphviz-pure==0.2.2' 'graphviz>=0.20'
fi
ln -sf graphviz-pure "$venv/bin/dot"
echo "setup: $venv/bin/dot -> graphviz-pure"
