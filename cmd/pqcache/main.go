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

// Command pqcache is the single pqcache binary: the operator (`pqcache manager`), the node agent
// (`pqcache agent`), the commands its worker pods run (sync, stage, bench) and the tools around them
// (verify, manifest, generations, watch, report, query, s3, ...), which also work on a laptop
// without Kubernetes. Its commands are package internal/cli.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/pqcache/pqcache/internal/cli"
)

func main() {
	if err := cli.NewRootCommand().Execute(); err != nil {
		var exit *cli.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.Code) // a command pqcache ran exited so: it has said why
		}
		fmt.Fprintln(os.Stderr, "pqcache:", err)
		os.Exit(1)
	}
}
