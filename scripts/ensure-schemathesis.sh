#!/usr/bin/env bash
# Prints the path of the Schemathesis CLI (the contract-testing tool the
# OpenAPI fuzz test runs), installing the pinned version from PyPI into
# .tools/ (git-ignored) when it is not there yet. Nothing but PyPI is used.
set -euo pipefail
version=4.32.5
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/.tools/schemathesis-$version"
if [ ! -x "$dir/bin/st" ]; then
  echo "ensure-schemathesis: installing schemathesis==$version from PyPI into $dir" >&2
  python3 -m venv "$dir" >&2
  "$dir/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version" >&2
fi
echo "$dir/bin/st"
