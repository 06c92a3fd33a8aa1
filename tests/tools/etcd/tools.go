//go:build tools

// Package tools pins go.etcd.io/etcd/server/v3 so that scripts/build-tools.sh
// can run
//
//	go build go.etcd.io/etcd/server/v3
//
// from this directory (the etcd server module's root package is its main
// package). The etcd modules carry local replace directives, so
// `go install go.etcd.io/etcd/server/v3@version` is refused by the go command;
// this wrapper module lists the sibling etcd modules explicitly instead.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
