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

package csi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pqcache/pqcache/agent/mountapi"
	"github.com/pqcache/pqcache/cache/generations"
)

// Locator is what the mount container asks the agent (agent/mountapi): where this node's copy of a
// Dataset is, if the node keeps one. *mountapi.Client is one.
type Locator interface {
	Locate(ctx context.Context, namespace, dataset string, generation int64) (mountapi.Response, error)
}

// findCopy is the copy's directory and, for a refusal of the generation, the nodes that hold one:
// from the agent over its socket (split), or from the agent's cache in this process.
func (d *Driver) findCopy(ctx context.Context, r request) (dir, others string, err error) {
	if d.Locator == nil {
		ds, err := d.locate(ctx, r)
		if err != nil {
			return "", "", err
		}
		return d.Copies.Dir(ds), holders(ds, r.generation), nil
	}
	resp, err := d.Locator.Locate(ctx, r.namespace, r.dataset, r.generation)
	if err != nil {
		return "", "", errorf(codes.Unavailable, "asking the node agent about Dataset %s: %v", r.key(), err)
	}
	if resp.Code != 0 {
		return "", "", errorf(codes.Code(resp.Code), "%s", resp.Message)
	}
	if err := confineCopy(d.CacheRoot, resp.Dir); err != nil {
		return "", "", errorf(codes.Internal, "the node agent named %q for Dataset %s: %v", resp.Dir, r.key(), err)
	}
	return resp.Dir, resp.Holders, nil
}

// confineCopy checks that dir is a copy's directory, <root>/<namespace>/<name>-<uid>, reached from
// root without a symlink: the unprivileged agent writes the cache, so the privileged side never
// follows a link it planted. With no root (single-process mode, tests) there is nothing to check.
func confineCopy(root, dir string) error {
	if root == "" {
		return nil
	}
	rel, err := filepath.Rel(root, dir)
	parts := strings.Split(rel, string(filepath.Separator))
	if err != nil || !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || len(parts) != 2 {
		return fmt.Errorf("not a copy's directory under the cache root %s", root)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the cache root: %w", err)
	}
	for _, p := range parts {
		if p == "." || p == ".." || p == "" {
			_ = unix.Close(fd) // only opened to walk; the refusal is what to report
			return errors.New("not a copy's directory")
		}
		next, err := unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		_ = unix.Close(fd) // the parent, only opened to walk
		if err != nil {
			return fmt.Errorf("opening %s without following a link: %w", p, err)
		}
		fd = next
	}
	return unix.Close(fd)
}

// mountLease binds the held generation at target. With a cache root, it binds the held directory
// itself (/proc/self/fd), after checking that it lies under the root: a link swapped in after Hold
// cannot redirect the mount, and a generation reached through a planted link is refused.
func (d *Driver) mountLease(lease *generations.Lease, target string) error {
	if d.CacheRoot == "" {
		return d.mount(lease.Dir, target)
	}
	f, err := lease.File()
	if err != nil || f == nil {
		return errorf(codes.Internal, "reopening generation %d: %v", lease.Generation, err)
	}
	defer func() { _ = f.Close() }() // a duplicate, only read for the mount; the lease keeps its own
	src := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	resolved, err := os.Readlink(src)
	if err != nil {
		return errorf(codes.Internal, "resolving generation %d: %v", lease.Generation, err)
	}
	if !strings.HasPrefix(resolved, filepath.Clean(d.CacheRoot)+string(filepath.Separator)) {
		return errorf(codes.Internal, "generation %d of %s resolves to %s, outside the cache root %s: refused", lease.Generation, lease.Dir, resolved, d.CacheRoot)
	}
	return d.mount(src, target)
}

// changed tells OnChange that the published volumes changed.
func (d *Driver) changed() {
	if d.OnChange != nil {
		d.OnChange()
	}
}

// AgentSide answers the mount container from the agent's process: Locate with the same checks as
// the driver in one process, InUse by keeping the last report for the agent's pruner.
type AgentSide struct {
	Node   string
	Reader client.Reader
	Copies CopyDirs

	mu    sync.Mutex
	inUse map[string]bool // nil until the mount container reported
	// located holds each directory answered lately, until locatedFor after the answer: between the
	// answer and the report that names the published volume, the copy is in use all the same.
	located map[string]time.Time
	now     func() time.Time // time.Now unless a test sets it
}

// locatedFor is how long an answered directory counts as in use without a report naming it: several
// report periods, so that a publish that succeeded has been reported by then.
const locatedFor = 6 * reportEvery

// Locate finds this node's copy of namespace/dataset, or the refusal kubelet shows on the pod.
func (a *AgentSide) Locate(ctx context.Context, namespace, dataset string, generation int64) mountapi.Response {
	d := &Driver{Node: a.Node, Reader: a.Reader, Copies: a.Copies}
	dir, others, err := d.findCopy(ctx, request{namespace: namespace, dataset: dataset, generation: generation})
	if err != nil {
		st := status.Convert(err)
		return mountapi.Response{Code: uint32(st.Code()), Message: mountapi.Clip(st.Message())}
	}
	a.mu.Lock()
	if a.located == nil {
		a.located = map[string]time.Time{}
	}
	a.located[dir] = a.clock()
	a.mu.Unlock()
	return mountapi.Response{Dir: dir, Holders: mountapi.Clip(others)}
}

// InUse records the mount container's report.
func (a *AgentSide) InUse(dirs []string) {
	m := make(map[string]bool, len(dirs))
	for _, dir := range dirs {
		m[dir] = true
	}
	a.mu.Lock()
	a.inUse = m
	a.mu.Unlock()
}

// Dirs is the agent's InUse: the last report and the directories answered lately, or nil before the
// first report, when the agent cannot know what pods read and so prunes nothing.
func (a *AgentSide) Dirs() map[string]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inUse == nil {
		return nil
	}
	m := make(map[string]bool, len(a.inUse)+len(a.located))
	for dir := range a.inUse {
		m[dir] = true
	}
	now := a.clock()
	for dir, at := range a.located {
		if now.Sub(at) > locatedFor {
			delete(a.located, dir)
			continue
		}
		m[dir] = true
	}
	return m
}

func (a *AgentSide) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

// reportEvery is how often the mount container repeats its in-use report, so that an agent that
// restarted hears it soon.
const reportEvery = 10 * time.Second

// InUseReporter sends the agent the copies that published volumes show, at start, after each
// publish and unpublish (Notify), and every reportEvery.
type InUseReporter struct {
	Volumes *Volumes
	Client  *mountapi.Client
	Log     *slog.Logger

	cue chan struct{}
	one sync.Once
}

// Notify asks for a report soon; it never blocks.
func (r *InUseReporter) Notify() {
	select {
	case r.cues() <- struct{}{}:
	default:
	}
}

func (r *InUseReporter) cues() chan struct{} {
	r.one.Do(func() { r.cue = make(chan struct{}, 1) })
	return r.cue
}

// Run reports until ctx ends.
func (r *InUseReporter) Run(ctx context.Context) {
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	for {
		dirs := make([]string, 0)
		for dir := range r.Volumes.Dirs() {
			dirs = append(dirs, dir)
		}
		if err := r.Client.ReportInUse(ctx, dirs); err != nil && ctx.Err() == nil {
			r.Log.Warn("Reporting the published copies to the agent", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.cues():
		}
	}
}
