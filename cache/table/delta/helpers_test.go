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
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// dirTable serves a table stored in a local folder, as the tests' stand-in for a bucket prefix.
type dirTable string

// log lists the table's _delta_log folder like a recursive S3 listing would.
func (d dirTable) log(t testing.TB) []LogObject {
	t.Helper()
	var out []LogObject
	root := string(d)
	err := filepath.WalkDir(filepath.Join(root, "_delta_log"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, LogObject{Key: filepath.ToSlash(rel), Size: info.Size()})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (d dirTable) fetch(_ context.Context, key string) (io.ReadCloser, error) {
	return os.Open(filepath.Join(string(d), filepath.FromSlash(key)))
}

// memTable is a synthetic log: key to content. Fetches are counted to show what was read.
type memTable struct {
	objects map[string][]byte
	fetched []string
}

func newMemTable() *memTable { return &memTable{objects: make(map[string][]byte)} }

// commit stores version v's commit from its lines, joined by newlines (no trailing one, as
// delta-rs writes them).
func (m *memTable) commit(v int64, lines ...string) *memTable {
	m.objects[commitKey(v)] = []byte(strings.Join(lines, "\n"))
	return m
}

func (m *memTable) log() []LogObject {
	var out []LogObject
	for k, b := range m.objects {
		out = append(out, LogObject{Key: k, Size: int64(len(b))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func (m *memTable) fetch(_ context.Context, key string) (io.ReadCloser, error) {
	m.fetched = append(m.fetched, key)
	b, ok := m.objects[key]
	if !ok {
		return nil, fmt.Errorf("no object %s", key)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

const (
	protocolLine = `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`
	metaLine     = `{"metaData":{"id":"0b6a1c55-5b0e-4a4f-a3f7-1c7a3d9e0f11","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[],"configuration":{},"createdTime":1}}`
	infoLine     = `{"commitInfo":{"timestamp":1,"operation":"WRITE"}}`
)

func addLine(path string, size int64) string {
	return fmt.Sprintf(`{"add":{"path":%q,"partitionValues":{},"size":%d,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":1}"}}`, path, size)
}

func removeLine(path string) string {
	return fmt.Sprintf(`{"remove":{"path":%q,"deletionTimestamp":2,"dataChange":true}}`, path)
}

func keysOf(files []File) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, f.Key)
	}
	return out
}
