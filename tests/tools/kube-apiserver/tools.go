//go:build tools

// Package tools pins k8s.io/kubernetes (and, through the replace lines in
// go.mod, its staging modules) so that scripts/build-tools.sh can run
//
//	go build k8s.io/kubernetes/cmd/kube-apiserver
//
// from this directory. The build tag keeps this file out of every real build;
// it exists only so `go mod tidy` records the dependency graph in go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
