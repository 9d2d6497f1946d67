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

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A process the cluster started is recorded as pids/<name> holding "PID PATH". Stopping it checks that
// the PID still runs PATH, so a recycled PID is never signalled.

// procOpts are how startProcess starts a process beyond its arguments.
type procOpts struct {
	env []string
	// unshare (CLONE_NEW*) gives the process new namespaces; with CLONE_NEWNS Go also makes its mounts
	// private, so nothing it mounts reaches the host.
	unshare uintptr
	// files are passed on as file descriptors 3, 4, ... (a listening socket, for the forwarder).
	files []*os.File
}

// startProcess starts bin in its own session (it outlives `up` and the terminal), with its output in
// logs/<name>.log, and records its PID.
func (c *cluster) startProcess(name, bin string, args []string, opts procOpts) error {
	if err := os.MkdirAll(c.path("logs"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(c.path("pids"), 0o755); err != nil {
		return err
	}
	logFile, err := os.OpenFile(c.path("logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// The process has its own descriptor of the log; this one wrote nothing.
	defer func() { _ = logFile.Close() }()
	// The process outlives this command (released below, stopped by stopProcess): no context ends it.
	cmd := exec.CommandContext(context.Background(), bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), opts.env...)
	cmd.ExtraFiles = opts.files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Unshareflags: opts.unshare}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	// Release, not Wait: the process belongs to the cluster, not to this command.
	_ = cmd.Process.Release()
	return c.recordPID(name, pid, bin)
}

func (c *cluster) recordPID(name string, pid int, bin string) error {
	return os.WriteFile(c.path("pids", name), fmt.Appendf(nil, "%d %s\n", pid, bin), 0o644)
}

// runningPID returns the PID recorded for name when that process is alive and still runs the
// recorded binary.
func (c *cluster) runningPID(name string) (int, bool) {
	data, err := os.ReadFile(c.path("pids", name))
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0, false
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0, false
	}
	return pid, processRuns(pid, fields[1])
}

// processRuns reports whether pid is alive (not a zombie) and its executable is bin.
func processRuns(pid int, bin string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || !alive(pid) {
		return false
	}
	want, err := filepath.EvalSymlinks(bin)
	if err != nil {
		want = bin
	}
	return strings.TrimSuffix(exe, " (deleted)") == want
}

// stopProcess sends SIGTERM to the recorded process, waits up to grace, then SIGKILLs it.
func (c *cluster) stopProcess(name string, grace time.Duration) {
	pid, ok := c.runningPID(name)
	if ok {
		terminate(pid, grace)
		logf("stopped %s (pid %d)", name, pid)
	}
	_ = os.Remove(c.path("pids", name))
}

// terminate sends SIGTERM to pid, waits up to grace for it to exit, then sends SIGKILL.
func terminate(pid int, grace time.Duration) {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for range 50 {
		if !alive(pid) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i <= 0 || len(stat) <= i+2 || stat[i+2] != 'Z'
}

// waitFor polls check every 200ms until it succeeds, the process named proc dies, or timeout passes.
// The error names the log to read.
func (c *cluster) waitFor(ctx context.Context, what, proc string, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		if proc != "" {
			if _, ok := c.runningPID(proc); !ok {
				return fmt.Errorf("%s exited while waiting for %s; see %s:\n%s", proc, what, c.path("logs", proc+".log"), tail(c.path("logs", proc+".log"), 15))
			}
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("timed out after %s waiting for %s: %v", timeout, what, last)
			if proc != "" {
				msg += fmt.Sprintf("; see %s:\n%s", c.path("logs", proc+".log"), tail(c.path("logs", proc+".log"), 15))
			}
			return errors.New(msg)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// run runs a short command and returns its error with its output.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// runOutput runs a short command and returns its standard output.
func runOutput(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}
