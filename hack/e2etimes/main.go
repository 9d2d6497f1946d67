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

// Command e2etimes prints where an e2e run's time went, from the Ginkgo JSON report that
// `make test-e2e` writes: the run's wall time, the parallel phase and the Serial tail, and the
// slowest specs with their containers. The suite's time budget (docs/development.md, "Measured
// times") is kept by reading this after each change.
//
//	go run ./hack/e2etimes [-top N] bin/e2e/report.json
package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

func main() {
	top := flag.Int("top", 15, "how many of the slowest specs to print")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: e2etimes [-top N] REPORT.json")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *top); err != nil {
		fmt.Fprintln(os.Stderr, "e2etimes:", err)
		os.Exit(1)
	}
}

func run(path string, top int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var reports []types.Report
	if err := json.Unmarshal(b, &reports); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	for _, r := range reports {
		summarize(r, top)
	}
	return nil
}

// summarize prints one suite's phases and slowest specs.
func summarize(r types.Report, top int) {
	var specs types.SpecReports
	var serialStart time.Time
	for _, s := range r.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt || s.State.Is(types.SpecStateSkipped|types.SpecStatePending) {
			continue
		}
		specs = append(specs, s)
		if s.IsSerial && (serialStart.IsZero() || s.StartTime.Before(serialStart)) {
			serialStart = s.StartTime
		}
	}
	wall := r.EndTime.Sub(r.StartTime)
	fmt.Printf("e2e: %s, %d specs, wall %s\n", r.SuiteDescription, len(specs), wall.Round(time.Second))
	if !serialStart.IsZero() {
		fmt.Printf("e2e: parallel phase %s, Serial tail %s\n", serialStart.Sub(r.StartTime).Round(time.Second), r.EndTime.Sub(serialStart).Round(time.Second))
	}
	slices.SortFunc(specs, func(a, b types.SpecReport) int { return cmp.Compare(b.RunTime, a.RunTime) })
	for _, s := range specs[:min(top, len(specs))] {
		serial := ""
		if s.IsSerial {
			serial = " [Serial]"
		}
		fmt.Printf("e2e: %6.0fs %s%s: %s (%s)\n", s.RunTime.Seconds(), s.State, serial,
			strings.Join(s.ContainerHierarchyTexts, " / "), s.LeafNodeText)
	}
}
