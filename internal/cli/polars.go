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
	"context"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/polars"
)

// polarsEngine finds the Polars program and interpreter and returns the engine and Polars' version.
// S3 needs nothing here: the resolved workload carries the endpoint, region and addressing, and the
// query process inherits the credentials.
func polarsEngine(ctx context.Context, a wire.BenchArgs, local benchLocal) (polars.Engine, string, error) {
	e, err := polars.Find(ctx, local.polarsDir, local.polarsPython)
	if err != nil {
		return e, "", err
	}
	e.Threads, e.PolarsEngine, e.ForceAsync = a.Threads, a.PolarsEngine, a.PolarsForceAsync
	version, err := e.Version(ctx)
	return e, version, err
}
