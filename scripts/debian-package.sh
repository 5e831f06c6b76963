#!/usr/bin/env bash
# Unpacks a Debian package of this machine's release into the machine-wide
# cache's debian/ (scripts/lib/cache.sh)
# without installing it (apt-get download, dpkg-deb -x: no maintainer
# scripts run, no service starts, nothing on the machine changes) and
# prints the directory it is unpacked in. Kept per version: an unchanged
# candidate costs nothing the next time.
#
#   scripts/debian-package.sh PACKAGE     e.g. busybox-static -> DIR, DIR/bin/busybox
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/cache.sh"
debian="$METAHOOK_CACHE/debian"
if [ $# -ne 1 ]; then
    echo "usage: $0 PACKAGE" >&2
    exit 2
fi
pkg=$1
candidate() { apt-cache policy "$pkg" 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" {print $2}'; }
version="$(candidate)"
if [ -z "$version" ]; then
    echo "debian-package: no candidate for $pkg; apt-get update" >&2
    apt-get update -qq >&2
    version="$(candidate)"
    [ -n "$version" ] || { echo "debian-package: Debian has no package $pkg here" >&2; exit 1; }
fi
dir="$debian/$pkg-${version//:/_}"
if [ ! -f "$dir/.unpacked" ]; then
    mkdir -p "$debian"
    tmp="$(mktemp -d "$debian/.$pkg.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    echo "debian-package: $pkg $version" >&2
    (cd "$tmp" && apt-get download -q "$pkg=$version" >&2)
    mkdir "$tmp/root"
    dpkg-deb -x "$tmp"/*.deb "$tmp/root"
    touch "$tmp/root/.unpacked"
    rm -rf "$dir"
    # Another run may have unpacked the same version first: keep that one.
    mv -T "$tmp/root" "$dir" 2>/dev/null || true
    # Older versions of the same package are of no use.
    find "$debian" -maxdepth 1 -name "$pkg-[0-9]*" ! -name "$(basename "$dir")" -exec rm -rf {} +
fi
echo "$dir"
