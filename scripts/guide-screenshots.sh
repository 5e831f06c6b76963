#!/usr/bin/env bash
# Screenshots of the built guide in a real browser (headless Chromium), to
# look at: the theme, the sidebar, code highlighting, images. Not part of
# scripts/test.sh (CI has no browser). Builds the guide first if
# target/book is missing; installs Debian's chromium with apt-get (as root)
# if it is not there.
#
#   scripts/guide-screenshots.sh [PAGE...]    PAGE as in target/book, e.g. cli.html
#
# Writes target/guide-screenshots/<page>.png, 1280x1600, and prints the paths.
set -euo pipefail
cd "$(dirname "$0")/.."

book=$PWD/target/book
out=$PWD/target/guide-screenshots
pages=("$@")
if [ ${#pages[@]} -eq 0 ]; then
  pages=(index.html getting-started.html your-own-controller.html testing-your-controller.html cli.html metrics.html)
fi

if [ ! -f "$book/index.html" ]; then
  scripts/guide.sh
fi

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  browser=$(command -v chromium)
fi

mkdir -p "$out"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
for page in "${pages[@]}"; do
  png="$out/${page%.html}.png"
  # --virtual-time-budget lets the page's scripts (highlighting, the
  # sidebar) run before the shot.
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$profile" --virtual-time-budget=3000 \
    --window-size=1280,1600 --screenshot="$png" "file://$book/$page" 2>/dev/null
  echo "$png"
done
