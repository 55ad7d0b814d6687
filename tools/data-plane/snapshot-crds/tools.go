//go:build tools

// Package tools pins the external-snapshotter client module, whose config/crd holds the
// VolumeSnapshot CRDs (snapshot.storage.k8s.io/v1) that build.sh copies for the test cluster.
package tools

import (
	_ "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
)
