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

package worker

import (
	"slices"
	"sync"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/workload"
)

// partialSummary keeps the summary file (a pod's termination message) up to date while a run goes
// on: after each query it holds the queries measured so far and the ones still to run. A runner
// killed between queries (the kernel's OOM killer picks the runner too at times) then leaves what it
// measured, and the controller names the queries it did not finish, instead of one result for the
// whole run that names none. The run's final summary replaces it.
type partialSummary struct {
	mu        sync.Mutex
	file      string
	res       wire.BenchResult
	remaining []string
}

func newPartialSummary(a wire.BenchArgs, resolved *workload.Resolved) *partialSummary {
	p := &partialSummary{file: a.ReportFile, res: wire.BenchResult{Label: a.Label, Engine: a.Engine, Data: a.Data, Config: a.ConfigName,
		Input: a.IOType, Iterations: a.Iterations, Warmups: a.Warmups, Workload: resolved.Workload, Isolation: a.Isolation}}
	for _, q := range resolved.Queries {
		p.remaining = append(p.remaining, q.Name)
	}
	return p
}

// done records q, measured, and rewrites the file (best effort: the final summary is what counts).
func (p *partialSummary) done(q wire.QueryResult) {
	if p == nil || p.file == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.res.Queries = append(p.res.Queries, q)
	if q.Status != wire.StatusSucceeded {
		p.res.FailedQueries = append(p.res.FailedQueries, q.Name)
	}
	if i := slices.Index(p.remaining, q.Name); i >= 0 {
		p.remaining = slices.Delete(p.remaining, i, i+1)
	}
	p.res.Unfinished = slices.Clone(p.remaining)
	_ = writeSummary(&p.res, p.file)
}
