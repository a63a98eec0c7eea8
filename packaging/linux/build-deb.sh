#!/usr/bin/env bash
# Wrap the one-folder bundle in a .deb: /opt/loomchat, `loomchat` on PATH, a menu entry and
# an icon, the system libraries it needs as Depends; removing the package removes it all.
#
#   bash packaging/linux/build-deb.sh BUNDLE_DIR VERSION OUT_DIR ICONS_DIR  (packaging/icons.py)
set -euo pipefail

bundle="$1"; version="$2"; out="$3"; icons="$4"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
arch="$(dpkg --print-architecture)"
root="$(mktemp -d)/loomchat_${version}_${arch}"
trap 'rm -rf "$(dirname "$root")"' EXIT

mkdir -p "$root/DEBIAN" "$root/opt" "$root/usr/bin" "$root/usr/share/applications" \
         "$root/usr/share/icons/hicolor/scalable/apps" "$root/usr/share/icons/hicolor/256x256/apps" \
         "$root/usr/share/doc/loomchat"
cp -a "$bundle" "$root/opt/loomchat"
ln -s /opt/loomchat/loomchat "$root/usr/bin/loomchat"  # the bootloader follows the link home
cp "$here/loomchat.desktop" "$root/usr/share/applications/loomchat.desktop"
cp "$repo/resources/icons/loomchat.svg" "$root/usr/share/icons/hicolor/scalable/apps/loomchat.svg"
# A PNG too, for menus that do not draw SVG.
cp "$icons/loomchat.png" "$root/usr/share/icons/hicolor/256x256/apps/loomchat.png"
cat > "$root/usr/share/doc/loomchat/copyright" <<'TXT'
Loomchat is released under the MIT licence. It bundles Python, Qt (PySide6, LGPLv3) and
llama.cpp's llama-server (MIT), each under its own licence.
TXT

size_kb="$(du -sk "$root" | cut -f1)"
cat > "$root/DEBIAN/control" <<CONTROL
Package: loomchat
Version: $version
Architecture: $arch
Maintainer: Loomchat developers <dev@loomchat.invalid>
Installed-Size: $size_kb
Section: utils
Priority: optional
Depends: libc6 (>= 2.36), libgl1, libegl1, libxcb1, libx11-6, libx11-xcb1, libxkbcommon0, libxkbcommon-x11-0, libxcb-cursor0, libxcb-icccm4, libxcb-keysyms1, libxcb-shape0, libxcb-image0, libxcb-randr0, libxcb-render-util0, libxcb-xfixes0, libxcb-xkb1, libfontconfig1, fontconfig-config, fonts-dejavu-core | fonts-liberation2 | fonts-freefont-ttf, libdbus-1-3, libglib2.0-0, libgomp1
Recommends: libwayland-client0, libwayland-cursor0, libwayland-egl1
Suggests: gnome-keyring | kwalletmanager
Homepage: https://loomchat.invalid
Description: chat with local models that can use tools, offline
 Loomchat is a desktop app for the models people run on their own machine
 (Ollama, LM Studio, KoboldCPP, llama.cpp). The models can use tools: a
 calculator, the clock, charts, files in a folder you choose, and MCP servers.
 It includes llama.cpp's server, so a downloaded GGUF model runs with no
 other program.
CONTROL
for script in postinst postrm; do
  cat > "$root/DEBIAN/$script" <<'SH'
#!/bin/sh
set -e
# Refresh the menu and icon caches where the desktop has them.
if command -v update-desktop-database >/dev/null 2>&1; then update-desktop-database -q /usr/share/applications || true; fi
if command -v gtk-update-icon-cache >/dev/null 2>&1; then gtk-update-icon-cache -q -f /usr/share/icons/hicolor || true; fi
SH
  chmod 0755 "$root/DEBIAN/$script"
done

deb="$out/loomchat_${version}_${arch}.deb"
dpkg-deb --root-owner-group "-Z${DEB_COMPRESSION:-xz}" --build "$root" "$deb" >/dev/null
echo "$deb"
