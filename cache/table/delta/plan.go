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
	"slices"
	"sort"
)

// logIndex is the listing sorted into what a snapshot can be built from.
type logIndex struct {
	commits     map[int64]LogObject
	commitVers  []int64                       // ascending
	checkpoints map[int64][]LogObject         // complete checkpoints only: one file, or every part
	cpVers      []int64                       // ascending, complete checkpoints
	v2          map[int64]string              // a UUID-named (v2) checkpoint per version, which we cannot read
	parts       map[int64]map[int][]LogObject // multi-part candidates by version and part count
}

// plan is what replaying one version reads: an optional checkpoint, then commits in order.
type plan struct {
	version    int64
	checkpoint []LogObject // parts in order; empty when replay starts at version 0
	commits    []LogObject
}

// indexLog sorts a listing. Keys that are not commits or checkpoints are ignored.
func indexLog(log []LogObject) (*logIndex, error) {
	ix := &logIndex{
		commits:     make(map[int64]LogObject),
		checkpoints: make(map[int64][]LogObject),
		v2:          make(map[int64]string),
		parts:       make(map[int64]map[int][]LogObject),
	}
	for _, obj := range log {
		n, ok, err := parseLogKey(obj.Key)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if obj.Size < 0 {
			return nil, fmt.Errorf("%w: %s: listed size %d", ErrCorruptLog, obj.Key, obj.Size)
		}
		ix.add(n, obj)
	}
	ix.completeParts()
	ix.commitVers = sortedKeys(ix.commits)
	ix.cpVers = sortedKeys(ix.checkpoints)
	return ix, nil
}

func (ix *logIndex) add(n logName, obj LogObject) {
	switch n.Kind {
	case kindCommit:
		ix.commits[n.Version] = obj
	case kindCheckpoint:
		ix.checkpoints[n.Version] = []LogObject{obj} // a classic checkpoint beats a multi-part one
	case kindCheckpointV2:
		ix.v2[n.Version] = obj.Key
	case kindCheckpointPart:
		if ix.parts[n.Version] == nil {
			ix.parts[n.Version] = make(map[int][]LogObject)
		}
		byParts := ix.parts[n.Version]
		if byParts[n.Parts] == nil {
			byParts[n.Parts] = make([]LogObject, n.Parts)
		}
		byParts[n.Parts][n.Part-1] = obj
	}
}

// completeParts keeps, for versions without a classic checkpoint, a multi-part checkpoint whose
// parts are all listed (the fewest parts if several are). One with a part missing is ignored:
// multi-part checkpoints are not written atomically, so a reader must fall back to an older one.
func (ix *logIndex) completeParts() {
	for v, byParts := range ix.parts {
		if _, ok := ix.checkpoints[v]; ok {
			continue
		}
		counts := sortedKeys(byParts)
		for _, p := range counts {
			if !slices.ContainsFunc(byParts[p], func(o LogObject) bool { return o.Key == "" }) {
				ix.checkpoints[v] = byParts[p]
				break
			}
		}
	}
}

// empty says whether the listing has no commit and no checkpoint of any kind.
func (ix *logIndex) empty() bool {
	return len(ix.commits) == 0 && len(ix.parts) == 0 && len(ix.checkpoints) == 0 && len(ix.v2) == 0
}

// planAt picks the newest complete checkpoint at or below v and the commits after it up to v.
func (ix *logIndex) planAt(v int64, lim Limits) (plan, error) {
	p := plan{version: v}
	start := int64(0)
	if i := sort.Search(len(ix.cpVers), func(i int) bool { return ix.cpVers[i] > v }); i > 0 {
		cp := ix.cpVers[i-1]
		p.checkpoint = ix.checkpoints[cp]
		start = cp + 1
	}
	if v-start+1 > lim.MaxCommits {
		return plan{}, tooLarge(fmt.Sprintf("replaying commits %d to %d", start, v), "MaxCommits", lim.MaxCommits)
	}
	if start == v+1 {
		if obj, ok := ix.commits[v]; ok {
			// Readers take the snapshot's commitInfo (e.g. its in-commit timestamp) from the
			// commit at its version, so keep it beside a checkpoint of the same version.
			p.commits = append(p.commits, obj)
		}
		return p, nil
	}
	for u := start; u <= v; u++ {
		obj, ok := ix.commits[u]
		if !ok {
			return plan{}, ix.missing(u, v)
		}
		p.commits = append(p.commits, obj)
	}
	return p, nil
}

// missing explains why commit u, needed for version v, is not there.
func (ix *logIndex) missing(u, v int64) error {
	for cv, key := range ix.v2 {
		if cv <= v {
			return fmt.Errorf("%w: version %d needs v2 checkpoint %s", ErrUnsupported, v, key)
		}
	}
	if len(ix.commitVers) > 0 && u < ix.commitVers[0] && len(ix.cpVers) > 0 && ix.cpVers[0] > v {
		return fmt.Errorf("%w: version %d: its commits were cleaned up (oldest checkpoint is %d)",
			ErrNoSuchVersion, v, ix.cpVers[0])
	}
	if len(ix.commitVers) == 0 || v > ix.commitVers[len(ix.commitVers)-1] {
		return fmt.Errorf("%w: version %d is not in the log", ErrNoSuchVersion, v)
	}
	return fmt.Errorf("%w: %s is missing (a gap in the commits up to version %d)", ErrCorruptLog, commitKey(u), v)
}

// latest is the newest version whose log is complete: a complete checkpoint, or the end of a run
// of consecutive commits that starts at version 0 or right after (or inside) a complete checkpoint.
func (ix *logIndex) latest() (int64, bool) {
	best := int64(-1)
	if n := len(ix.cpVers); n > 0 {
		best = ix.cpVers[n-1]
	}
	c := ix.commitVers
	for i := len(c) - 1; i >= 0 && c[i] > best; {
		j := i
		for j > 0 && c[j-1] == c[j]-1 {
			j--
		}
		if c[j] == 0 || ix.hasCheckpointIn(c[j]-1, c[i]) {
			best = c[i]
			break
		}
		i = j - 1
	}
	return best, best >= 0
}

// hasCheckpointIn says whether a complete checkpoint lies in [lo, hi].
func (ix *logIndex) hasCheckpointIn(lo, hi int64) bool {
	i := sort.Search(len(ix.cpVers), func(i int) bool { return ix.cpVers[i] >= lo })
	return i < len(ix.cpVers) && ix.cpVers[i] <= hi
}

// keys lists the log keys a reader of the plan's version needs, sorted.
func (p plan) keys() []string {
	keys := make([]string, 0, len(p.checkpoint)+len(p.commits))
	for _, o := range p.checkpoint {
		keys = append(keys, o.Key)
	}
	for _, o := range p.commits {
		keys = append(keys, o.Key)
	}
	sort.Strings(keys)
	return keys
}

func sortedKeys[K int | int64, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
