//go:build tools

// Package tools pins the kwok main package that build.sh compiles.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
