#!/bin/sh
# Creates the namespace and the custom search attributes the transaction
# workflow keeps current (workflows/search-attributes.ts; a test keeps this
# list equal to it). Idempotent. Run by `npm run cluster` with the Temporal
# CLI it installs, and by docker-compose.yml's admin-tools container.
#   TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default "default"),
#   TEMPORAL_RETENTION (default 30d), TEMPORAL_CLI (default "temporal").
set -eu
address=${TEMPORAL_ADDRESS:-127.0.0.1:7233}
namespace=${TEMPORAL_NAMESPACE:-default}
cli=${TEMPORAL_CLI:-temporal}

if ! "$cli" operator namespace describe --address "$address" --namespace "$namespace" >/dev/null 2>&1; then
  "$cli" operator namespace create --address "$address" --namespace "$namespace" --retention "${TEMPORAL_RETENTION:-30d}"
fi

for sa in EsignReferenceId:Keyword EsignTransactionId:Keyword EsignId:Keyword EsignStatus:Keyword EsignSignedCount:Int EsignWaitingFor:KeywordList EsignBatchId:Keyword EsignCallbackHealth:Keyword; do
  name=${sa%%:*}
  type=${sa##*:}
  # Already there (a re-run) is fine; any other failure is not.
  if ! out=$("$cli" operator search-attribute create --address "$address" --namespace "$namespace" --name "$name" --type "$type" 2>&1); then
    case "$out" in
      *already*) ;;
      *) echo "$out" >&2; exit 1 ;;
    esac
  fi
done
echo "namespace $namespace ready with its search attributes"
