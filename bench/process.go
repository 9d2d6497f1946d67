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

package bench

// One engine process, in either isolation: started in its own process group, its memory sampled,
// its timing file read, its end classified (succeeded, failed, timed out, OOM-killed).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/memory"
	"github.com/pqcache/pqcache/bench/netdev"
)

// proc is a started engine process.
type proc struct {
	cmd        *exec.Cmd
	stdout     io.Reader
	stderr     tailBuffer
	timingFile string
	start      time.Time
	self       memory.Usage
	netBefore  netdev.Snapshot
	sampler    *memory.Sampler
}

// startProc starts cmd with a fresh timing file at timingFile named in its environment.
func startProc(spec Spec, cmd *exec.Cmd, timingFile string) (*proc, error) {
	p := &proc{cmd: cmd, timingFile: timingFile}
	// A file left by an earlier process must not pass for this one's report.
	if err := os.Remove(timingFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("clearing the timing file: %w", err)
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, wire.EnvTimingFile+"="+timingFile)
	// Its own process group, so a timeout stops the whole tree the engine started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.stdout = stdout
	cmd.Stderr = &p.stderr
	// The kernel's max RSS of a child started with vfork (as Go does) includes the parent's RSS at exec
	// time, so it only says something about the query when it is above ours.
	p.self, _ = memory.TreeUsage(os.Getpid())
	p.netBefore = netdev.Read(spec.NetInterfaces)
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	preferOOMKill(cmd.Process.Pid)
	p.sampler = memory.Start(cmd.Process.Pid, spec.SampleInterval)
	return p, nil
}

// ended is what a process left once it exited.
type ended struct {
	waitErr  error
	elapsed  time.Duration
	netBytes int64
	// peak is above the first sample; peakTotal the absolute peak of the whole tree.
	peak      memory.Usage
	peakTotal int64
	source    string
	timings   timings
}

// wait waits for the process (its stdout read to the end first) and collects its measurements.
func (p *proc) wait(spec Spec) ended {
	err := p.cmd.Wait()
	e := ended{waitErr: err, elapsed: time.Since(p.start), netBytes: netdev.Read(spec.NetInterfaces).Since(p.netBefore)}
	peak := p.sampler.Stop()
	e.peak, e.peakTotal, e.source = peak.AboveBaseline(), peak.Max.Total, "sampled"
	// The kernel's max RSS is the largest single process of the tree: a floor for the tree's peak that
	// a 50 ms sampler can miss.
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss<<10 > p.self.Total {
		if kernel := ru.Maxrss<<10 - peak.Baseline.Total; kernel > e.peak.Total {
			e.peak.Total, e.source = kernel, "rusage"
		}
		e.peakTotal = max(e.peakTotal, ru.Maxrss<<10)
	}
	e.timings = readTimings(p.timingFile)
	return e
}

// aboveReady is the peak above the engine's resident memory at its ready signal (0: not reported).
func (e ended) aboveReady() int64 {
	if e.timings.readyRSS == 0 {
		return 0
	}
	return max(0, e.peakTotal-e.timings.readyRSS)
}

// outcome classifies how the process ended: status, exit code and the message kept. name is the
// query it was running; ctx is the query's context (with its timeout), parent the run's.
func (p *proc) outcome(parent, ctx context.Context, spec Spec, e ended, readErr error, name string) (string, int, string) {
	switch {
	case parent.Err() != nil:
		// The run itself was stopped (a signal, its deadline): we killed the query, no OOM killer did.
		return wire.StatusFailed, 0, fmt.Sprintf("query %s was stopped with the run: %v", name, context.Cause(parent))
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return wire.StatusTimeout, 0, fmt.Sprintf("query %s ran past its %s timeout and was stopped", name, spec.QueryTimeout)
	case e.waitErr != nil:
		ps := p.cmd.ProcessState
		if ps == nil {
			return wire.StatusFailed, 0, e.waitErr.Error()
		}
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			// Killed by someone else than us: in a memory-limited container, the OOM killer.
			return wire.StatusOOMKilled, ps.ExitCode(), strings.TrimSpace(fmt.Sprintf("killed by SIGKILL (out of memory) after %d ms at a peak of %d MiB\n%s",
				e.elapsed.Milliseconds(), e.peakTotal>>20, p.stderr.String()))
		}
		return wire.StatusFailed, ps.ExitCode(), p.stderr.String()
	case readErr != nil:
		return wire.StatusFailed, 0, "reading the result: " + readErr.Error()
	}
	return wire.StatusSucceeded, 0, ""
}

// runOnce runs one query in a fresh process (process isolation).
func runOnce(parent context.Context, spec Spec, inv Invocation, timingFile string) iteration {
	ctx := parent
	if spec.QueryTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, spec.QueryTimeout)
		defer cancel()
	}
	inv.Queries = []string{inv.Query}
	cmd, err := spec.Engine.Command(ctx, inv)
	if err != nil {
		return iteration{status: wire.StatusFailed, stderrTail: err.Error()}
	}
	p, err := startProc(spec, cmd, timingFile)
	if err != nil {
		return iteration{status: wire.StatusFailed, stderrTail: err.Error()}
	}
	rows, digest, readErr := digestRows(p.stdout)
	e := p.wait(spec)
	it := iteration{rows: rows, digest: digest, wallMillis: e.elapsed.Milliseconds(), peak: e.peak, source: e.source,
		peakAboveReady: e.aboveReady(), netBytes: e.netBytes}
	it.engineMillis, it.engineOK = e.timings.query(inv.Query, true)
	it.startupMillis, it.startupOK = e.timings.startupMillis(p.start.UnixNano())
	it.status, it.exitCode, it.stderrTail = p.outcome(parent, ctx, spec, e, readErr, inv.Query)
	return it
}
