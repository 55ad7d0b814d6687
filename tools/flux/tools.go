//go:build tools

// Package tools pins the two Flux main packages that build.sh compiles.
package tools

import (
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/source-controller"
)
