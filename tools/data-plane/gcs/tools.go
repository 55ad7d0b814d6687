//go:build tools

// Package tools pins the fake-gcs-server main package (a Google Cloud Storage emulator) that build.sh compiles.
package tools

import (
	_ "github.com/fsouza/fake-gcs-server"
)
