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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pqcache/pqcache/cache/generations"
)

// Volume is one published volume: which copy and generation a pod's target shows.
type Volume struct {
	ID         string `json:"id"`
	Target     string `json:"target"`
	Dataset    string `json:"dataset"` // namespace/name
	Dir        string `json:"dir"`     // the copy's directory
	Generation int64  `json:"generation"`

	lease *generations.Lease
}

// Volumes is what this node has published, each volume with the lease that keeps its generation
// from the garbage collector. Leases are flocks of the agent's process, so they end with it; a record
// per volume on the node's disk lets the next agent take them again before it syncs anything
// (Restore). The records live in the plugin's directory under kubelet's, which outlives pods.
type Volumes struct {
	dir string

	mu   sync.Mutex
	byID map[string]*Volume
}

// OpenVolumes reads the records in dir.
func OpenVolumes(dir string) (*Volumes, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the published volumes' directory: %w", err)
	}
	return &Volumes{dir: dir, byID: map[string]*Volume{}}, nil
}

// Get returns the volume published under id, if any.
func (v *Volumes) Get(id string) (*Volume, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	vol, ok := v.byID[id]
	return vol, ok
}

// Add records a published volume and the lease it holds.
func (v *Volumes) Add(vol *Volume, lease *generations.Lease) error {
	vol.lease = lease
	b, err := json.Marshal(vol)
	if err != nil {
		return err
	}
	tmp := v.path(vol.ID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("recording volume %s: %w", vol.ID, err)
	}
	if err := os.Rename(tmp, v.path(vol.ID)); err != nil {
		return fmt.Errorf("recording volume %s: %w", vol.ID, err)
	}
	v.mu.Lock()
	v.byID[vol.ID] = vol
	v.mu.Unlock()
	return nil
}

// Remove forgets a volume and releases its generation.
func (v *Volumes) Remove(id string) error {
	v.mu.Lock()
	vol := v.byID[id]
	delete(v.byID, id)
	v.mu.Unlock()
	if vol != nil {
		vol.lease.Release()
	}
	if err := os.Remove(v.path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("forgetting volume %s: %w", id, err)
	}
	return nil
}

// Dirs lists the copies that published volumes show: the agent never prunes them.
func (v *Volumes) Dirs() map[string]bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	dirs := map[string]bool{}
	for _, vol := range v.byID {
		dirs[vol.Dir] = true
	}
	return dirs
}

// Restore takes the leases of the volumes an earlier agent published and that are still mounted;
// records whose target is no longer mounted (kubelet unpublished them while no agent ran, or the
// node restarted) are dropped. It returns the volumes restored.
func (v *Volumes) Restore(m Mounter) (int, error) {
	entries, err := os.ReadDir(v.dir)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		vol, err := v.restoreOne(filepath.Join(v.dir, e.Name()), m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if vol != nil {
			v.mu.Lock()
			v.byID[vol.ID] = vol
			v.mu.Unlock()
		}
	}
	return len(v.byID), errors.Join(errs...)
}

func (v *Volumes) restoreOne(path string, m Mounter) (*Volume, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var vol Volume
	if err := json.Unmarshal(b, &vol); err != nil || vol.ID == "" {
		return nil, errors.Join(fmt.Errorf("unreadable volume record %s", path), err, os.Remove(path))
	}
	mounted, err := m.IsMounted(vol.Target)
	if err != nil {
		return nil, err
	}
	if !mounted {
		return nil, os.Remove(path)
	}
	lease, err := generations.Hold(vol.Dir, vol.Generation)
	if err != nil {
		return nil, fmt.Errorf("holding generation %d of %s again for volume %s: %w", vol.Generation, vol.Dataset, vol.ID, err)
	}
	vol.lease = lease
	return &vol, nil
}

// path is a volume's record. kubelet's volume IDs are file-name safe ("csi-" and a hash); any
// other character is replaced so that an ID never names a path outside dir.
func (v *Volumes) path(id string) string {
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '.' {
			return '_'
		}
		return r
	}, id)
	return filepath.Join(v.dir, safe+".json")
}
