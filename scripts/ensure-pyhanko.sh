#!/usr/bin/env bash
# Prints the path of pyHanko's CLI (an independent PAdES validator the
# evidence tests hold our seals to), installing the pinned versions from PyPI
# when they are not there yet.
set -euo pipefail
version=0.38.0
cli=0.6.0
exec bash "$(dirname "$0")/ensure-pypi.sh" "pyhanko-$version-cli-$cli" pyhanko "pyhanko==$version" "pyhanko-cli==$cli"
