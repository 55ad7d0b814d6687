//go:build tools

// Package tools pins the gofakes3 main package (an S3-compatible object store) that build.sh compiles.
package tools

import (
	_ "github.com/johannesboyne/gofakes3/cmd/gofakes3"
)
