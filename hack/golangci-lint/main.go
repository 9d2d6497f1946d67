/*
Copyright 2026 The pqcache Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command golangci-lint is golangci-lint (github.com/golangci/golangci-lint/v2, unchanged) with
// Kubernetes' API linter (sigs.k8s.io/kube-api-linter) compiled in as the module plugin
// "kubeapilinter", which .golangci-kal.yaml enables on api/.
//
// golangci-lint's own way to add a module plugin ("golangci-lint custom") clones its repository at
// build time; this wrapper module builds the same thing from the Go module proxy alone, at the
// versions its go.mod pins, so `make lint` works on a machine that reaches only the proxy. It lives in
// a module of its own so that neither linter enters pqcache's go.mod.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/golangci/golangci-lint/v2/pkg/commands"
	"github.com/golangci/golangci-lint/v2/pkg/exitcodes"

	// Registers the "kubeapilinter" module plugin with golangci-lint.
	_ "sigs.k8s.io/kube-api-linter"
)

func main() {
	info := commands.BuildInfo{Version: "unknown", Commit: "?"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		for _, dep := range bi.Deps {
			if dep.Path == "github.com/golangci/golangci-lint/v2" {
				info.Version = dep.Version + "+kube-api-linter"
			}
		}
	}
	if err := commands.Execute(info); err != nil {
		fmt.Fprintf(os.Stderr, "golangci-lint: %v\n", err)
		os.Exit(exitcodes.Failure)
	}
}
