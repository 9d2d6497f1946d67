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
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startProfiles starts the CPU profile and the execution trace asked for (empty paths: none), until
// the returned stop is called. stop returns the errors of closing their files: a profile cut short
// (a full disk) must not pass for written.
func startProfiles(cpuProfile, tracePath string) (stop func() error, err error) {
	stopCPU := func() error { return nil }
	if cpuProfile != "" {
		if stopCPU, err = recordInto(cpuProfile, "--cpuprofile", pprof.StartCPUProfile, pprof.StopCPUProfile); err != nil {
			return nil, err
		}
	}
	stopTrace := func() error { return nil }
	if tracePath != "" {
		if stopTrace, err = recordInto(tracePath, "--trace", trace.Start, trace.Stop); err != nil {
			return nil, errors.Join(err, stopCPU())
		}
	}
	return func() error { return errors.Join(stopTrace(), stopCPU()) }, nil
}

// recordInto creates path and starts a recorder (the CPU profiler or the execution tracer) writing
// into it; the returned stop ends the recording and closes the file, whose error counts: the file
// is the output the user asked for.
func recordInto(path, flag string, start func(io.Writer) error, end func()) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if err := start(f); err != nil {
		_ = f.Close() // nothing written; the start error is the one to report
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return func() error {
		end()
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		return nil
	}, nil
}
