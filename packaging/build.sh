#!/usr/bin/env bash
# Build Loomchat's packaged app from a clean checkout, in one command:
#
#   bash packaging/build.sh
#
# gives, under build/:
#   dist/loomchat/                          the one-folder bundle (PyInstaller)
#   loomchat-VERSION-linux-ARCH.tar.gz      the portable archive of that folder
#   loomchat_VERSION_DEBARCH.deb            the Debian/Ubuntu package (Linux only)
#
# The bundle carries llama-server built for portable CPUs (packaging/portable-llama.sh,
# cached under pip's cache), so the app can run a GGUF model with no other program.
# Builds in its own virtual environment (build/venv) with only what the app needs.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
python="${PYTHON:-python3}"
out="$here/build"
version="$("$python" -c "import tomllib; print(tomllib.load(open('pyproject.toml', 'rb'))['project']['version'])")"
arch="$(uname -m)"

source "$here/packaging/apt-install.sh"
# What PyInstaller (binutils: strip, objdump), the llama-server build and the icons need.
apt_install binutils cmake g++ make libglib2.0-0 libgl1 libegl1 libfontconfig1 libxkbcommon0 libdbus-1-3

step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

step "build environment"
rm -rf "$out/dist" "$out/work" "$out/llama"
[ -d "$out/venv" ] || "$python" -m venv "$out/venv"
venv="$out/venv/bin/python"
[ -x "$venv" ] || venv="$out/venv/Scripts/python.exe"  # Windows (Git Bash)
"$venv" -m pip install -q --upgrade pip
"$venv" -m pip install -q "pyinstaller>=6.10" .

step "llama-server for portable CPUs"
wheel="$(bash packaging/portable-llama.sh "$venv" | tail -n 1)"
"$venv" packaging/llama_files.py "$wheel" "$out/llama"

step "icons"
"$venv" packaging/icons.py "$out/icons"

step "bundle (PyInstaller)"
LOOMCHAT_ICONS="$out/icons" LOOMCHAT_LLAMA_DIR="$out/llama" LOOMCHAT_VERSION="$version" "$venv" -m PyInstaller \
  --noconfirm --log-level WARN --distpath "$out/dist" --workpath "$out/work" packaging/loomchat.spec

if [ "$(uname -s)" = Linux ]; then
  step "strip"
  # Not the libraries auditwheel put in *.libs/ with hashed names (numpy's OpenBLAS and
  # the like): patchelf moved their segments, and strip leaves them unloadable ("ELF load
  # command address/offset not page-aligned"). The rest loses its symbols: ~45 MB.
  find "$out/dist/loomchat/_internal" -name "*.so*" -type f -not -path "*.libs/*" \
    -not -regex '.*-[0-9a-f]\{8\}\.so.*' -print0 | xargs -0 strip --strip-unneeded 2>/dev/null || true
fi

step "portable archive"
tarball="$out/loomchat-$version-linux-$arch.tar.gz"
tar -C "$out/dist" -czf "$tarball" loomchat

if command -v dpkg-deb >/dev/null; then
  step "Debian package"
  bash packaging/linux/build-deb.sh "$out/dist/loomchat" "$version" "$out" "$out/icons"
fi

step "done"
du -sh "$out/dist/loomchat"
ls -l "$out"/*.tar.gz "$out"/*.deb 2>/dev/null
