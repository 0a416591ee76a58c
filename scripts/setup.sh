#!/usr/bin/env bash
# Set up everything neurondev's demo and tests need: Debian's graphviz and chromium, a venv in .venv with the
# tested torch 2.9.0 + torch-xla 2.9.0 pair and the dev tools. A quick no-op when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv
stamp="$venv/.neurondev-setup"
want=$(cat pyproject.toml requirements/constraints.txt scripts/setup.sh scripts/setup_drawing.sh | sha256sum | cut -d' ' -f1)

system_packages() {
    local missing=()
    command -v dot >/dev/null 2>&1 || missing+=(graphviz)
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    [ ${#missing[@]} = 0 ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing Debian's ${missing[*]} (dot draws graphs; chromium checks the report and widgets)"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "setup: missing ${missing[*]} and no root for apt-get: drawing uses graphviz-pure from pip;" \
             "the browser tests need chromium (ask an admin: apt-get install chromium)" >&2
    fi
}

python_packages() {
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    echo "setup: installing the tested packages into $venv (torch is ~7 GB the first time; log: $venv/setup.log)"
    if ! { "$venv/bin/python" -m pip install --upgrade pip &&
           "$venv/bin/python" -m pip install -c requirements/constraints.txt -e '.[dev,xla]'; } >"$venv/setup.log" 2>&1; then
        tail -n 40 "$venv/setup.log" >&2
        echo "setup: pip failed; the whole log is $venv/setup.log" >&2
        exit 1
    fi
}

host_device() {
    # The host test device's C++, built once into ~/.cache/neurondev for this torch (the tests then pay a second)
    echo "setup: building neurondev's host test device for $1 (about a minute the first time)"
    "$1/bin/python" -c "import neurondev; neurondev.host_device()" >>"$1/setup.log" 2>&1 || {
        tail -n 20 "$1/setup.log" >&2; echo "setup: building the host test device failed; the log is $1/setup.log" >&2; exit 1; }
}

system_packages
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
python_packages
bash scripts/setup_drawing.sh "$venv"
host_device "$venv"
echo "$want" > "$stamp"
echo "setup: done"
