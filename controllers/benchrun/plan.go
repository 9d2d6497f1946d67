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

package benchrun

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// benchJob is one engine × configuration × input of a run.
type benchJob struct {
	engine datav1alpha1.BenchEngine
	config datav1alpha1.ResourceConfig
	input  datav1alpha1.BenchInput
	index  int // of the input, for the Job name
	// name is the Job's name, unique to the run (see benchJobName).
	name string
}

// engineLabel names an engine in status, reports and Job names: its label, else its name.
func engineLabel(e datav1alpha1.BenchEngine) string {
	if e.Label != "" {
		return e.Label
	}
	if e.Name == "" {
		return string(datav1alpha1.EngineDuckDB)
	}
	return string(e.Name)
}

// inputLabel names an input in status and reports: its type, and the claim for a claim input.
func inputLabel(in datav1alpha1.BenchInput) string {
	if in.Type == datav1alpha1.InputClaim {
		return "claim/" + in.ClaimName
	}
	return string(in.Type)
}

// readsS3 says whether an input reads (some of) its data straight from the bucket.
func readsS3(in datav1alpha1.BenchInput) bool {
	return in.Type == datav1alpha1.InputS3 || in.Type == datav1alpha1.InputMixedDirect
}

// runEngines is the run's engines; none means the built-in DuckDB.
func runEngines(run *datav1alpha1.BenchRun) []datav1alpha1.BenchEngine {
	if len(run.Spec.Engines) == 0 {
		return []datav1alpha1.BenchEngine{{Name: datav1alpha1.EngineDuckDB}}
	}
	return run.Spec.Engines
}

// plannedJobs lists a run's Jobs: every engine × configuration × input.
func plannedJobs(run *datav1alpha1.BenchRun) []benchJob {
	var planned []benchJob
	for _, e := range runEngines(run) {
		for _, c := range run.Spec.Configs {
			for i, in := range run.Spec.Inputs {
				j := benchJob{engine: e, config: c, input: in, index: i}
				j.name = benchJobName(run, j)
				planned = append(planned, j)
			}
		}
	}
	return planned
}

// unsupportedWith says why the Dataset cannot serve the run's inputs, or "".
func unsupportedWith(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset) string {
	for _, in := range run.Spec.Inputs {
		if (in.Type == datav1alpha1.InputMixedStaged || in.Type == datav1alpha1.InputMixedDirect) && len(ds.Spec.Fresh) == 0 {
			return fmt.Sprintf("input %s reads the Dataset's fresh prefixes apart, and Dataset %q has no spec.fresh", in.Type, ds.Name)
		}
	}
	if msg := sessionWithoutQueries(run); msg != "" {
		return msg
	}
	// The more specific refusal first: a Spark driver cannot take the Dataset's account even when the
	// run names it.
	if msg := sparkUnsupported(run, ds); msg != "" {
		return msg
	}
	if msg := refusedAccount(run, ds); msg != "" {
		return msg
	}
	return unsupportedDuringRefresh(run, ds)
}

// sessionWithoutQueries says why a command engine cannot run in session isolation: its command
// takes no {queries}, so one process cannot be told every query. The API cannot check it (a rule
// over the command's unbounded arguments exceeds the API server's cost budget); refusing here says
// so before any Job, rather than in each Job's log.
func sessionWithoutQueries(run *datav1alpha1.BenchRun) string {
	for _, e := range run.Spec.Engines {
		if e.Name == datav1alpha1.EngineCommand && e.Isolation == datav1alpha1.IsolationSession &&
			!slices.ContainsFunc(e.Command, func(a string) bool { return strings.Contains(a, "{queries}") }) {
			return fmt.Sprintf("engine %s runs in session isolation, and its command has no {queries} (the comma-separated query names one process runs in turn): add it, or use isolation: process", engineLabel(e))
		}
	}
	return ""
}

// unsupportedDuringRefresh says why a run with duringRefresh cannot run on ds: its refreshes are
// suspended (no sync would run), or a volume input would read the stable paths that a sync replaces
// file by file, where a query could mix two generations.
func unsupportedDuringRefresh(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset) string {
	if !run.Spec.DuringRefresh {
		return ""
	}
	if ds.Spec.Refresh.Suspend {
		return fmt.Sprintf("duringRefresh measures queries while Dataset %q refreshes, and its refreshes are suspended (spec.refresh.suspend)", ds.Name)
	}
	if ds.Spec.Source.Table != nil {
		return fmt.Sprintf("duringRefresh rewrites files in the bucket behind the Dataset, and Dataset %q is a %s table, whose files change only by commits: commit to the table while the run runs instead", ds.Name, ds.Spec.Source.Table.Format)
	}
	for _, in := range run.Spec.Inputs {
		if in.Type != datav1alpha1.InputS3 && in.Type != datav1alpha1.InputClaim && syncspec.KeepGenerations(&ds.Spec) == 0 {
			return fmt.Sprintf("duringRefresh with input %s needs whole generations for the queries to read, and Dataset %q keeps none (spec.sync.keepGenerations: 0)", in.Type, ds.Name)
		}
	}
	return ""
}

// benchJobName names one Job of a run: the run's, engine's and configuration's names for people, and
// a hash of the run's UID, the engine, the configuration and the input, so that no two runs (nor two
// inputs of one run) share a name, whatever their names: "x-a" with config "b" and "x" with config
// "a-b" differ. The default engine, duckdb, is left out of the readable part.
func benchJobName(run *datav1alpha1.BenchRun, j benchJob) string {
	suffix := "-" + jobs.HashOf(8, string(run.UID), engineLabel(j.engine), j.config.Name, strconv.Itoa(j.index), inputLabel(j.input))
	base := run.Name + "-" + j.config.Name
	if l := engineLabel(j.engine); l != string(datav1alpha1.EngineDuckDB) {
		base = run.Name + "-" + l + "-" + j.config.Name
	}
	return jobs.FitName(base, suffix, jobs.MaxJobName)
}

// generationDir is where a generation of the data is on the mounted volume (see docs/sync.md).
func generationDir(g int64) string {
	return jobs.DataMountPath + "/.pqcache/generations/" + strconv.FormatInt(g, 10)
}

// generationKept says whether the Dataset's volume holds generation g as a tree readers can open.
func generationKept(ds *datav1alpha1.Dataset, g int64) bool {
	if ds.Status.Generations == nil {
		return false
	}
	for _, k := range ds.Status.Generations.Kept {
		if k.Generation == g {
			return true
		}
	}
	return false
}
