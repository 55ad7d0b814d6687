//go:build tools

// Package tools pins the restic main package that build.sh compiles.
package tools

import (
	_ "github.com/restic/restic/cmd/restic"
)
