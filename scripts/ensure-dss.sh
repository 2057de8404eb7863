#!/usr/bin/env bash
# Builds the tests' EU DSS validator (test/validators/dss: a Java CLI on DSS 6.3
# from Maven Central, an independent judge of our PAdES seals) once per machine,
# into a cache outside the clone keyed on its pom, sources and policy, and
# prints the path of the runnable jar. Needs Java 17+ and Maven 3.8+; a fresh
# machine builds in under a minute (the first time, Maven fetches DSS and its
# plugins into ~/.m2); later runs reuse the jar and need neither Maven nor network.
set -euo pipefail
version=6.3
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/test/validators/dss"
key=$(cd "$src" && find pom.xml policy.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
cache=${ESIGN_CACHE_DIR:-$HOME/.cache/esign-orchestrator}
dir=$cache/dss-$version-$key
if [ -f "$dir/dss-validator.jar" ]; then
  echo "$dir/dss-validator.jar"
  exit 0
fi
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "ensure-dss: $tool is needed to build the DSS validator (apt-get install default-jdk-headless maven)" >&2
    exit 1
  fi
done
mkdir -p "$cache"
# One build at a time (test workers and .ci/run may ask together); the winner's jar serves the others.
exec 9>"$dir.lock"
flock 9
if [ -f "$dir/dss-validator.jar" ]; then
  echo "$dir/dss-validator.jar"
  exit 0
fi
tmp=$(mktemp -d "$dir.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/project" "$tmp/out"
cp -r "$src/pom.xml" "$src/src" "$tmp/project/"
echo "ensure-dss: building the DSS $version validator from Maven Central (under a minute, once)" >&2
# Offline first: with everything already in ~/.m2 that needs no network at all.
if ! (cd "$tmp/project" && mvn -B -q -o -Dstyle.color=never -DskipTests package) >"$tmp/offline.log" 2>&1; then
  (cd "$tmp/project" && mvn -B -q -Dstyle.color=never -DskipTests package) >&2
fi
cp "$tmp/project/target/dss-validator.jar" "$tmp/out/dss-validator.jar"
cp "$src/policy.xml" "$tmp/out/policy.xml"
rm -rf "$dir"
mv "$tmp/out" "$dir"
echo "$dir/dss-validator.jar"
