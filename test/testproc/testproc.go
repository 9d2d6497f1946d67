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

// Package testproc runs a real server binary for tests (versitygw, goaws): on a free 127.0.0.1 port,
// in its own process group so that stopping it reaches anything it spawns and a test's Ctrl-C does
// not, with its output in a log file and a health check before the test goes on.
package testproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Process is one run of a server binary; Start may be called again after Kill (a restart).
type Process struct {
	// Name names the server in errors and log excerpts.
	Name string
	// LogPath receives the server's output, appended across restarts.
	LogPath string
	// Health is a URL that answers 200 once the server is ready; Client fetches it (nil: a client
	// with a 1 s timeout).
	Health string
	Client *http.Client

	cmd    *exec.Cmd
	exited chan struct{}
}

// StartTimeout bounds how long a server may take to answer its health check (versitygw and goaws
// take well under a second here).
const StartTimeout = 15 * time.Second

// Start runs bin with args, env added to the environment, and waits up to StartTimeout for Health.
func (p *Process) Start(bin string, args, env []string) error {
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// The server outlives Start: Kill and Stop end it, not a context.
	cmd := exec.CommandContext(context.Background(), bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("running %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	client := p.Client
	if client == nil {
		client = &http.Client{Timeout: time.Second}
	}
	deadline := time.Now().Add(StartTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("%s exited during start-up (%v)", p.Name, cmd.ProcessState)
		default:
		}
		if resp, err := get(ctx, client, p.Health); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Kill()
	return fmt.Errorf("%s not healthy at %s after %s", p.Name, p.Health, StartTimeout)
}

// get GETs url with client.
func get(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}

// Kill stops the server at once with SIGKILL, as a crash would.
func (p *Process) Kill() {
	if p.cmd == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	p.cmd = nil
}

// Stop ends the server with SIGTERM, then SIGKILL after 5 s.
func (p *Process) Stop() {
	if p.cmd == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
		p.cmd = nil
	case <-time.After(5 * time.Second):
		p.Kill()
	}
}

// LogTail returns the end of the server's log, for failure messages.
func (p *Process) LogTail() string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(no %s log: %v)", p.Name, err)
	}
	const maxTail = 4 << 10
	if len(b) > maxTail {
		b = b[len(b)-maxTail:]
	}
	return p.Name + " log:\n" + strings.TrimSpace(string(b))
}

// OnFreePort calls start with a free 127.0.0.1:PORT until it succeeds, three times at most: a port
// the kernel picked can be taken by someone else before the server binds it.
func OnFreePort(start func(addr string) error) error {
	var err error
	for range 3 {
		l, lerr := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if lerr != nil {
			return fmt.Errorf("finding a free port: %w", lerr)
		}
		addr := l.Addr().String()
		l.Close()
		if err = start(addr); err == nil {
			return nil
		}
	}
	return err
}

// Binary finds a tool the tests run: the path in $env, else bin/NAME at the module root, which
// `make NAME` builds.
func Binary(env, name string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", env, p, err)
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found at %s: run `make %s` to build it, or set %s", name, p, name, env)
	}
	return p, nil
}

// moduleRoot walks up from the working directory (a package directory under `go test`) to go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}
