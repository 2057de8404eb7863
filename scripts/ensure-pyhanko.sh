#!/usr/bin/env bash
# Prints the path of pyHanko's CLI (an independent PAdES validator the
# evidence tests hold our seals to), installing the pinned versions from PyPI
# into .tools/ (git-ignored) when they are not there yet. Nothing but PyPI is used.
set -euo pipefail
version=0.38.0
cli=0.6.0
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/.tools/pyhanko-$version-cli-$cli"
if [ ! -x "$dir/bin/pyhanko" ]; then
  echo "ensure-pyhanko: installing pyhanko==$version pyhanko-cli==$cli from PyPI into $dir" >&2
  python3 -m venv "$dir" >&2
  "$dir/bin/pip" install --quiet --disable-pip-version-check "pyhanko==$version" "pyhanko-cli==$cli" >&2
fi
echo "$dir/bin/pyhanko"
