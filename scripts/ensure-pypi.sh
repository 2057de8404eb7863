#!/usr/bin/env bash
# Installs pinned PyPI packages into a virtualenv under .tools/<name> (git-ignored)
# unless its <bin> is already there, and prints the path of <bin>. Used by the
# ensure-* scripts of the independent checkers (Schemathesis, pyHanko); nothing
# but PyPI is used.
# Usage: ensure-pypi.sh <name> <bin> <package==version>...
set -euo pipefail
name=$1 bin=$2
shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/.tools/$name"
if [ ! -x "$dir/bin/$bin" ]; then
  echo "ensure-pypi: installing $* from PyPI into $dir" >&2
  python3 -m venv "$dir" >&2
  "$dir/bin/pip" install --quiet --disable-pip-version-check "$@" >&2
fi
echo "$dir/bin/$bin"
