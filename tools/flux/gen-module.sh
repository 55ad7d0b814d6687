#!/usr/bin/env bash
# Regenerate the Go wrapper module (go.mod, go.sum) for the Flux versions in versions.env.
# Needs the Go module proxy. The controllers' own replace directives do not carry over to a module
# that requires them, so the ones their builds depend on are repeated here (their ./api replaces
# are not needed: the api modules are published at the same versions). go get, not go mod tidy:
# tidy wants a test-only dependency of source-controller (fluxcd/pkg/helmtestserver) that the
# proxy refuses; go get records only what building the two main packages needs.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
export GOFLAGS=-mod=mod GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
rm -f "$here/go.mod" "$here/go.sum"
(cd "$here" && go mod init blueprint-operator.io/tools/flux >/dev/null 2>&1 &&
  go mod edit -go=1.26.0 \
    -replace=github.com/opencontainers/go-digest=github.com/opencontainers/go-digest@v1.0.1-0.20220411205349-bde1400a84be \
    -replace=sigs.k8s.io/kustomize/api=sigs.k8s.io/kustomize/api@v0.21.1 \
    -replace=sigs.k8s.io/kustomize/kyaml=sigs.k8s.io/kustomize/kyaml@v0.21.1 \
    -replace=gopkg.in/yaml.v3=gopkg.in/yaml.v3@v3.0.1 \
    -replace=github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.1 &&
  go get "github.com/fluxcd/source-controller@v$SOURCE_CONTROLLER_VERSION" \
    "github.com/fluxcd/kustomize-controller@v$KUSTOMIZE_CONTROLLER_VERSION")
echo "flux: source-controller v$SOURCE_CONTROLLER_VERSION, kustomize-controller v$KUSTOMIZE_CONTROLLER_VERSION"
