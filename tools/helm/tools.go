//go:build tools

// Package tools pins the helm main package that build.sh compiles.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
