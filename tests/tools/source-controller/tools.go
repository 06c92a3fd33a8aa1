//go:build tools

// Package tools pins github.com/fluxcd/source-controller (and, through the replace lines
// copied into go.mod, the dependency versions its own go.mod pins) so that
// scripts/build-tools.sh can run
//
//	go build github.com/fluxcd/source-controller
//
// from this directory. The build tag keeps this file out of every real build;
// it exists only so `go mod tidy` records the dependency graph in go.sum.
package tools

import (
	_ "github.com/fluxcd/source-controller"
)
