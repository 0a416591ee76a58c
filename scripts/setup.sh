#!/usr/bin/env bash
# Set up everything neurondev's demo and tests need: Debian's graphviz and chromium, and two venvs:
#   .venv          the tested XLA pair (torch 2.9.0 + torch-xla 2.9.0) and the dev tools
#   .venv-current  today's torch for TorchNeuron (torch 2.13.0, the CPU build; no torch-xla) and the dev tools
# each with neurondev's host test device built for its torch. A quick no-op when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

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

# venv VENV CONSTRAINTS EXTRAS [PINS...]: the venv with neurondev (editable) and its extras, pinned by CONSTRAINTS
venv() {
    local venv=$1 constraints=$2 extras=$3
    shift 3
    local stamp="$venv/.neurondev-setup"
    local want
    want=$(cat pyproject.toml "$constraints" scripts/setup.sh scripts/setup_drawing.sh | sha256sum | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return 0
    fi
    enough_disk "$venv"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    echo "setup: installing the tested packages into $venv (log: $venv/setup.log)"
    if ! install "$venv" "$constraints" "$extras" "$@" >"$venv/setup.log" 2>&1; then
        tail -n 40 "$venv/setup.log" >&2
        echo "setup: the install failed; the whole log is $venv/setup.log" >&2
        exit 1
    fi
    bash scripts/setup_drawing.sh "$venv"
    host_device "$venv"
    echo "$want" > "$stamp"
}

# install VENV CONSTRAINTS EXTRAS [PINS...]: uv (from PyPI: parallel downloads, about a minute for .venv's 8 GB here
# against pip's minutes), told where pip looks (uv reads no pip.conf: this machine's find-links and extra indexes);
# pip itself when uv cannot be had or fails
install() {
    local venv=$1 constraints=$2 extras=$3
    shift 3
    local uv_flags=()
    local key value
    while IFS='=' read -r key value; do
        value=${value//\'/}
        case $key in
            *find-links) for v in $value; do uv_flags+=(--find-links "$v"); done ;;
            *extra-index-url) for v in $value; do uv_flags+=(--extra-index-url "$v"); done ;;
        esac
    done < <("$venv/bin/python" -m pip config list 2>/dev/null)
    [ ${#uv_flags[@]} = 0 ] || uv_flags+=(--index-strategy unsafe-best-match)  # a local index first, PyPI for the rest
    if "$venv/bin/python" -m pip install -q uv &&
       "$venv/bin/uv" pip install --python "$venv/bin/python" "${uv_flags[@]}" -c "$constraints" -e ".[$extras]" "$@"; then
        return 0
    fi
    echo "setup: uv failed (above); installing with pip instead"
    "$venv/bin/python" -m pip install --upgrade pip &&
        "$venv/bin/python" -m pip install -c "$constraints" -e ".[$extras]" "$@"
}

enough_disk() {
    # pip dies half-way with 'No space left on device': say so before it starts (.venv ~9 GB, .venv-current ~3 GB)
    local need_gb=12 free_gb
    free_gb=$(df -Pk . | awk 'NR==2 {print int($4 / 1048576)}')
    if [ "$free_gb" -lt "$need_gb" ]; then
        echo "setup: $1 needs about $need_gb GB free here and $(pwd) has $free_gb GB:" \
             "free some space (old clones, ~/.cache/pip) and run make setup again" >&2
        exit 1
    fi
}

host_device() {
    # The C++ of the host test device and of the dispatcher's observer (every native device's accounting), each built
    # once into ~/.cache/neurondev for this torch (the tests then pay a second)
    echo "setup: building neurondev's host test device and observer for $1 (about a minute the first time)"
    "$1/bin/python" -c "import neurondev; neurondev.host_device(); from neurondev.native.observer import observer_module; observer_module()" \
        >>"$1/setup.log" 2>&1 || {
        tail -n 20 "$1/setup.log" >&2; echo "setup: building neurondev's C++ failed; the log is $1/setup.log" >&2; exit 1; }
}

system_packages
# the two venvs side by side: one's download overlaps the other's, and one's C++ build the other's install
venv .venv requirements/constraints.txt dev,xla,docs,mutate &                  # torch 2.9.0 (the CUDA build, ~7 GB the first time)
tested=$!
venv .venv-current requirements/constraints-current.txt dev 'torch==2.13.0' &  # found on these machines' disk, no download
current=$!
failed=0
wait "$tested" || failed=1
wait "$current" || failed=1
[ "$failed" = 0 ] || { echo "setup: failed (above)" >&2; exit 1; }
echo "setup: done"
