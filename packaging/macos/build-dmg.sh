#!/usr/bin/env bash
# macOS: the PyInstaller .app (built by packaging/build.sh on a Mac) in a drag-to-install
# disk image.
#
#   bash packaging/macos/build-dmg.sh build/dist/Loomchat.app VERSION build
#
# Unsigned: Gatekeeper asks the user to confirm the first launch (right-click, Open).
# Signing and notarising need an Apple Developer ID: set CODESIGN_IDENTITY to sign.
set -euo pipefail

app="$1"; version="$2"; out="$3"
if [ -n "${CODESIGN_IDENTITY:-}" ]; then
  codesign --deep --force --options runtime --sign "$CODESIGN_IDENTITY" "$app"
fi
staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
cp -R "$app" "$staging/"
ln -s /Applications "$staging/Applications"  # drag the app onto this link to install
dmg="$out/Loomchat-$version-macos-$(uname -m).dmg"
hdiutil create -volname "Loomchat $version" -srcfolder "$staging" -ov -format UDZO "$dmg"
echo "$dmg"
