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

package delta

import (
	"fmt"
	"sort"
	"strings"
)

// state is the table as replay has built it so far: later actions win (PROTOCOL.md "Action
// Reconciliation"). Live files are keyed by path; an add replaces the path's earlier entry and a
// remove cancels it only when its deletion vector id matches, since (path, dv id) is the logical
// file and a commit that swaps a file's deletion vector holds the add of the new one and the remove
// of the old one in either order.
type state struct {
	lim      Limits
	files    map[string]dvFile
	protocol *Protocol
	meta     *metaData
	actions  int64
	// current is the log key being replayed and protocolKey the one the protocol in force came
	// from, so that errors about the protocol name the object that set it.
	current     string
	protocolKey string
}

type dvFile struct {
	size int64
	dv   dvRef
}

func newState(lim Limits) *state {
	return &state{lim: lim, files: make(map[string]dvFile)}
}

// apply folds one action into the state.
func (s *state) apply(a action) error {
	switch a.Kind {
	case actAdd, actRemove:
		s.actions++
		if s.actions > s.lim.MaxActions {
			return tooLarge("the file actions replayed", "MaxActions", s.lim.MaxActions)
		}
		if a.Kind == actAdd {
			s.files[a.File.Key] = dvFile{size: a.File.Size, dv: a.File.DV}
		} else if f, ok := s.files[a.File.Key]; ok && f.dv.ID == a.File.DV.ID {
			delete(s.files, a.File.Key)
		}
	case actProtocol:
		p := a.Protocol
		s.protocol, s.protocolKey = &p, s.current
	case actMetaData:
		m := a.Meta
		s.meta = &m
	}
	return nil
}

// snapshot checks that the replayed state is a readable table and returns it for version v.
func (s *state) snapshot(v int64, logKeys []string) (Snapshot, error) {
	if s.protocol == nil || s.meta == nil {
		return Snapshot{}, fmt.Errorf("%w: version %d has no protocol or no metaData action in %s",
			ErrCorruptLog, v, keyRange(logKeys))
	}
	if err := checkProtocol(*s.protocol); err != nil {
		return Snapshot{}, fmt.Errorf("version %d: protocol from %s: %w", v, s.protocolKey, err)
	}
	snap := Snapshot{
		Version:          v,
		LogKeys:          logKeys,
		Files:            make([]File, 0, len(s.files)),
		Protocol:         *s.protocol,
		MetadataID:       s.meta.ID,
		PartitionColumns: s.meta.PartitionColumns,
	}
	dvs := make(map[string]bool)
	for key, f := range s.files {
		snap.Files = append(snap.Files, File{Key: key, Size: f.size})
		if f.dv.Key != "" && !dvs[f.dv.Key] {
			dvs[f.dv.Key] = true
			snap.DeletionVectorFiles = append(snap.DeletionVectorFiles, f.dv.Key)
		}
	}
	sort.Slice(snap.Files, func(i, j int) bool { return snap.Files[i].Key < snap.Files[j].Key })
	sort.Strings(snap.DeletionVectorFiles)
	return snap, nil
}

// keyRange names the keys replayed without listing thousands of them.
func keyRange(keys []string) string {
	switch len(keys) {
	case 0:
		return "no log object"
	case 1, 2, 3:
		return strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s ... %s (%d objects)", keys[0], keys[len(keys)-1], len(keys))
}
