#!/usr/bin/env bash
# Prints the path of the Schemathesis CLI (the contract-testing tool the
# OpenAPI fuzz test runs), installing the pinned version from PyPI when it is
# not there yet.
set -euo pipefail
version=4.32.5
exec bash "$(dirname "$0")/ensure-pypi.sh" "schemathesis-$version" st "schemathesis==$version"
