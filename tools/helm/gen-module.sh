#!/usr/bin/env bash
# Regenerate the Go wrapper module (go.mod, go.sum) for the Helm version in versions.env.
# Needs the Go module proxy.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
export GOFLAGS=-mod=mod
rm -f "$here/go.mod" "$here/go.sum"
(cd "$here" && go mod init blueprint-operator.io/tools/helm >/dev/null 2>&1 &&
  go mod edit -require="helm.sh/helm/v4@v$HELM_VERSION" -go=1.26.0 && go mod tidy)
echo "helm: helm.sh/helm/v4@v$HELM_VERSION"
