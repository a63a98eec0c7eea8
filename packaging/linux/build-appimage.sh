#!/usr/bin/env bash
# AppImage recipe: the one-folder bundle as an AppDir, packed by appimagetool.
#
#   bash packaging/linux/build-appimage.sh BUNDLE_DIR VERSION OUT_DIR ICONS_DIR
#
# Not run by packaging/build.sh: appimagetool (and the AppImage runtime it embeds) comes
# only from GitHub releases, which this project's build machine cannot reach. Put
# appimagetool on PATH (https://github.com/AppImage/appimagetool/releases) to use it.
set -euo pipefail

bundle="$1"; version="$2"; out="$3"; icons="$4"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v appimagetool >/dev/null || {
  echo "appimagetool is not installed: get it from github.com/AppImage/appimagetool/releases" >&2
  exit 2
}
appdir="$(mktemp -d)/Loomchat.AppDir"
trap 'rm -rf "$(dirname "$appdir")"' EXIT
mkdir -p "$appdir/usr/bin"
cp -a "$bundle" "$appdir/usr/bin/loomchat-bundle"
cat > "$appdir/AppRun" <<'SH'
#!/bin/sh
exec "$(dirname "$(readlink -f "$0")")/usr/bin/loomchat-bundle/loomchat" "$@"
SH
chmod 0755 "$appdir/AppRun"
cp "$here/loomchat.desktop" "$appdir/loomchat.desktop"
cp "$icons/loomchat.png" "$appdir/loomchat.png"
ARCH="$(uname -m)" appimagetool "$appdir" "$out/Loomchat-$version-$(uname -m).AppImage"
