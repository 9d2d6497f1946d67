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

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// MixedSource is what a mixed input reads: every file under the static source except those under the
// fresh prefixes, and those from the fresh source (a staged directory, or the bucket itself), so that
// the probe of a mixed input measures the two paths its queries take, in their proportions.
type MixedSource struct {
	Static, Fresh ProbeSource
	// StaticRoot and FreshRoot are what a listed name starts with before its path relative to the data.
	StaticRoot, FreshRoot string
	// Prefixes are the fresh prefixes, relative to the data.
	Prefixes []string
}

// StaticTag and FreshTag start the names a MixedSource lists: which source a file is read from.
const (
	StaticTag = "static:"
	FreshTag  = "fresh:"
)

// Files lists the static files outside the fresh prefixes and the fresh files inside them, each
// tagged with the source it comes from.
func (m MixedSource) Files(ctx context.Context) ([]string, error) {
	static, err := m.Static.Files(ctx)
	if err != nil {
		return nil, err
	}
	fresh, err := m.Fresh.Files(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range static {
		if !m.underFresh(name, m.StaticRoot) {
			out = append(out, StaticTag+name)
		}
	}
	for _, name := range fresh {
		if m.underFresh(name, m.FreshRoot) {
			out = append(out, FreshTag+name)
		}
	}
	return out, nil
}

func (m MixedSource) underFresh(name, root string) bool {
	rel := strings.TrimPrefix(filepath.ToSlash(strings.TrimPrefix(name, root)), "/")
	return slices.ContainsFunc(m.Prefixes, func(p string) bool { return strings.HasPrefix(rel, p) })
}

// Open reads a listed file from the source its tag names.
func (m MixedSource) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if rest, ok := strings.CutPrefix(name, FreshTag); ok {
		return m.Fresh.Open(ctx, rest)
	}
	return m.Static.Open(ctx, strings.TrimPrefix(name, StaticTag))
}
