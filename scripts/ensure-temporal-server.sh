#!/usr/bin/env bash
# Builds the Temporal server and its SQL schema tool once, from the Go module
# proxy (the toolchain comes from there too), into a cache outside the clone,
# with the PostgreSQL schema files of the same version. Prints the directory.
# The version matches docker-compose.yml's temporalio/server image; a test
# keeps them equal. A fresh machine builds in about 4 minutes; later runs reuse it.
set -euo pipefail
version=1.32.2
toolchain=go1.26.10
dir=${ESIGN_CACHE_DIR:-$HOME/.cache/esign-orchestrator}/temporal-server-$version
if [ -x "$dir/temporal-server" ] && [ -x "$dir/temporal-sql-tool" ] && [ -d "$dir/schema/postgresql" ]; then
  echo "$dir"
  exit 0
fi
# The Go distribution's usual home, when it is not on PATH.
command -v go >/dev/null 2>&1 || [ ! -x /usr/local/go/bin/go ] || PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null 2>&1; then
  echo "ensure-temporal-server: Go is needed to build the Temporal server $version (apt-get install golang, or put go on PATH)" >&2
  exit 1
fi
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "ensure-temporal-server: building temporal-server and temporal-sql-tool $version (a few minutes, once)" >&2
GOTOOLCHAIN=$toolchain GOBIN="$tmp/bin" GOFLAGS=-mod=mod go install \
  "go.temporal.io/server/cmd/server@v$version" "go.temporal.io/server/cmd/tools/sql@v$version" >&2
modcache=$(GOTOOLCHAIN=$toolchain go env GOMODCACHE)
cp -r "$modcache/go.temporal.io/server@v$version/schema" "$tmp/schema"
chmod -R u+w "$tmp/schema"
rm -rf "$dir/schema"
mv "$tmp/schema" "$dir/schema"
mv "$tmp/bin/sql" "$dir/temporal-sql-tool"
mv "$tmp/bin/server" "$dir/temporal-server"
echo "$dir"
