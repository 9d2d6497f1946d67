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

package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// Copies is the node's cache root: one directory per Dataset copy, <root>/<namespace>/<name>-<uid>,
// so that a Dataset deleted and created again under the same name never reuses the old files. It
// also answers the peer server's question "which directory is bucket NAMESPACE.NAME".
type Copies struct {
	root string
	lock *os.File

	mu   sync.Mutex
	dirs map[string]string // bucket name -> directory, for the copies this node keeps
	// seq counts the calls of Dir; touched is, for each directory Dir gave, the seq of its last call:
	// a directory taken after a pruner's Mark is not the pruner's to remove (see Prune).
	seq     uint64
	touched map[string]uint64
}

// PruneMark is a point in the life of Copies, taken by Mark before a pruner lists what the node keeps.
type PruneMark uint64

// OpenCopies takes the cache root for this agent alone: an exclusive flock on <root>/.agent.lock,
// held until Close. A second agent on the same root (two DaemonSets, or a pod that did not stop)
// fails here instead of writing the same directories.
func OpenCopies(root string) (*Copies, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("creating the cache root: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(root, ".agent.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close() // the lock file was only opened to be locked; the flock error is the one to report
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another agent holds the cache root %s: two agents never write one directory. Where nodes share a "+
				"disk (nodes of one machine, as hack/local-cluster's), give each its own root: the chart's agent.cacheRoot under "+
				"kubelet's root (/var/lib/kubelet/pqcache-copies), which is per node there", root)
		}
		return nil, fmt.Errorf("locking the cache root: %w", err)
	}
	return &Copies{root: root, lock: f, dirs: map[string]string{}, touched: map[string]uint64{}}, nil
}

// Close releases the cache root.
func (c *Copies) Close() error { return c.lock.Close() }

// Bucket is the name a peer serves a Dataset's copy under.
func Bucket(namespace, name string) string { return namespace + "." + name }

// Dir is the directory of ds's copy, and records it for the peer server.
func (c *Copies) Dir(ds *datav1alpha1.Dataset) string {
	dir := filepath.Join(c.root, ds.Namespace, ds.Name+"-"+string(ds.UID))
	c.mu.Lock()
	c.dirs[Bucket(ds.Namespace, ds.Name)] = dir
	c.seq++
	c.touched[dir] = c.seq
	c.mu.Unlock()
	return dir
}

// Mark is taken before listing what the node keeps, and given to Prune with that list.
func (c *Copies) Mark() PruneMark {
	c.mu.Lock()
	defer c.mu.Unlock()
	return PruneMark(c.seq)
}

// Lookup is the peer server's Roots.
func (c *Copies) Lookup(bucket string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dir, ok := c.dirs[bucket]
	return dir, ok
}

// Prune removes the copies of Datasets this node no longer keeps: keep holds the directories of the
// copies it keeps, as listed after since was taken (Mark). Only directories that look like copies
// (<namespace>/<name>-<uid>) are touched. A directory that Dir gave after since is kept whatever keep
// says: its DatasetReplica came after the listing, and its sync may be writing into it. The check and
// the directory's move out of the way happen under the lock that Dir takes, so a Dir that comes
// during a Prune either keeps its directory or gets an empty one to start again.
func (c *Copies) Prune(keep map[string]bool, since PruneMark) ([]string, error) {
	namespaces, err := os.ReadDir(c.root)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, ns := range namespaces {
		if strings.HasPrefix(ns.Name(), prunedPrefix) {
			// Left by a Prune that did not finish (the agent stopped).
			if err := os.RemoveAll(filepath.Join(c.root, ns.Name())); err != nil {
				return removed, fmt.Errorf("removing %s: %w", ns.Name(), err)
			}
			continue
		}
		if !ns.IsDir() || strings.HasPrefix(ns.Name(), ".") {
			continue
		}
		copies, err := os.ReadDir(filepath.Join(c.root, ns.Name()))
		if err != nil {
			return removed, err
		}
		for _, cp := range copies {
			dir := filepath.Join(c.root, ns.Name(), cp.Name())
			if !cp.IsDir() || keep[dir] || !strings.Contains(cp.Name(), "-") {
				continue
			}
			gone, err := c.removeUnlessTaken(dir, since)
			if err != nil {
				return removed, err
			}
			if gone {
				removed = append(removed, dir)
			}
		}
	}
	return removed, nil
}

// prunedPrefix starts the name of a copy that Prune moved aside to remove it.
const prunedPrefix = ".pruned-"

// removeUnlessTaken removes dir unless Dir gave it after since. Under the lock, dir is only renamed
// (at once, on the same filesystem) and forgotten; the slow removal of its files comes after.
func (c *Copies) removeUnlessTaken(dir string, since PruneMark) (bool, error) {
	c.mu.Lock()
	if c.touched[dir] > uint64(since) {
		c.mu.Unlock()
		return false, nil
	}
	aside, err := os.MkdirTemp(c.root, prunedPrefix)
	if err == nil {
		err = os.Rename(dir, filepath.Join(aside, "copy"))
	}
	if err == nil {
		c.forgetLocked(dir)
	}
	c.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("moving %s aside: %w", dir, err)
	}
	if err := os.RemoveAll(aside); err != nil {
		return true, fmt.Errorf("removing %s: %w", dir, err)
	}
	return true, nil
}

// forgetLocked drops dir from what Copies knows; c.mu is held.
func (c *Copies) forgetLocked(dir string) {
	delete(c.touched, dir)
	for b, d := range c.dirs {
		if d == dir {
			delete(c.dirs, b)
		}
	}
}
