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

package cli

import (
	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/bench/polars"
)

// polarsFlags are bench's flags for the built-in Polars engine.
type polarsFlags struct {
	dir                   string
	streaming, forceAsync bool
	s3                    polars.S3
}

func (p *polarsFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&p.dir, "polars-dir", "", "With --engine polars: the directory of run.js and its node_modules (default: $"+polars.EnvDir+", ../lib/pqcache/polars beside this binary, or the checkout's bench/polars).")
	f.BoolVar(&p.streaming, "polars-streaming", false, "With --engine polars: run on Polars' streaming engine instead of the in-memory one.")
	f.BoolVar(&p.forceAsync, "polars-force-async", false, "With --engine polars: POLARS_FORCE_ASYNC=1, the object-store reader for local files too.")
	registerS3Endpoint(cmd, &p.s3, "With s3:// data (--engine polars, --probe-streams)")
}

// engine finds the Polars program and returns the engine and the nodejs-polars version.
func (p *polarsFlags) engine(threads int, freshData string, freshPrefixes []string) (polars.Engine, string, error) {
	e, err := polars.Find(p.dir)
	if err != nil {
		return e, "", err
	}
	e.Threads, e.Streaming, e.ForceAsync, e.S3 = threads, p.streaming, p.forceAsync, p.s3
	e.FreshData, e.FreshPrefixes = freshData, freshPrefixes
	version, err := e.Version()
	return e, version, err
}
