#!/bin/sh
# Refreshes the front-end libraries embedded in ptyhub web (package web, go:embed of
# static/vendor). The versions are pinned in npm/package.json and npm/package-lock.json;
# to move to a new release, change package.json, run `npm install --package-lock-only`
# in npm/, then this script, and commit static/vendor with the lock file. Only the
# minified dist files and each package's LICENSE are copied: `go build` and
# `go install` never need npm, and nothing is fetched when the page runs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../static/vendor"
cd "$here/npm"
npm ci --ignore-scripts --no-audit --no-fund
m=node_modules
rm -rf "$out"
mkdir -p "$out/xterm" "$out/addon-fit" "$out/asciinema-player"
cp "$m/@xterm/xterm/lib/xterm.js" "$m/@xterm/xterm/css/xterm.css" "$m/@xterm/xterm/LICENSE" "$out/xterm/"
cp "$m/@xterm/addon-fit/lib/addon-fit.js" "$m/@xterm/addon-fit/LICENSE" "$out/addon-fit/"
cp "$m/asciinema-player/dist/bundle/asciinema-player.min.js" \
   "$m/asciinema-player/dist/bundle/asciinema-player.css" \
   "$m/asciinema-player/LICENSE" "$out/asciinema-player/"
# Strip the source-map references: the maps are not shipped.
for f in "$out"/*/*.js; do
	sed -i.bak '/^\/\/# sourceMappingURL=/d' "$f" && rm -f "$f.bak"
done
for p in @xterm/xterm @xterm/addon-fit asciinema-player; do
	printf '%s %s\n' "$p" "$(node -p "require('./$m/$p/package.json').version + ' ' + require('./$m/$p/package.json').license")"
done > "$out/VERSIONS"
cat "$out/VERSIONS"
