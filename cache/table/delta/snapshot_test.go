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
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// base is version 0 of a synthetic table with one file.
func base() *memTable {
	return newMemTable().commit(0, infoLine, protocolLine, metaLine, addLine("a.parquet", 10))
}

func TestLogErrors(t *testing.T) {
	cases := []struct {
		name    string
		table   *memTable
		version int64 // -1: Latest
		want    error
		msg     []string // substrings the message must hold
	}{
		{"empty listing", newMemTable(), -1, ErrNotATable, nil},
		{"only junk", func() *memTable {
			m := newMemTable()
			m.objects["_delta_log/_last_checkpoint"] = []byte(`{"version":3}`)
			m.objects["_delta_log/00000000000000000000.crc"] = []byte(`{}`)
			m.objects["_delta_log/0000000000000000000.json"] = []byte(protocolLine)
			return m
		}(), -1, ErrNotATable, nil},
		{"gap in versions", base().commit(1, addLine("b.parquet", 1)).commit(3, addLine("c.parquet", 1)), 3,
			ErrCorruptLog, []string{"00000000000000000002.json", "gap"}},
		{"version past the end", base(), 5, ErrNoSuchVersion, nil},
		{"truncated last line", base().commit(1, addLine("b.parquet", 1), `{"add":{"path":"c.parquet","si`), 1,
			ErrCorruptLog, []string{"00000000000000000001.json line 2"}},
		{"not JSON", base().commit(1, `hello`), 1, ErrCorruptLog, []string{"00000000000000000001.json line 1"}},
		{"JSON array", base().commit(1, `[1]`), 1, ErrCorruptLog, []string{"line 1"}},
		{"add without path", base().commit(1, `{"add":{"size":3}}`), 1, ErrCorruptLog, []string{"missing path"}},
		{"add without size", base().commit(1, `{"add":{"path":"b"}}`), 1, ErrCorruptLog, []string{"size"}},
		{"negative size", base().commit(1, addLine("b", -1)), 1, ErrCorruptLog, []string{"size"}},
		{"size not a number", base().commit(1, `{"add":{"path":"b","size":"7"}}`), 1, ErrCorruptLog, []string{"size"}},
		{"empty path", base().commit(1, addLine("", 1)), 1, ErrCorruptLog, []string{"empty path"}},
		{"remove of empty path", base().commit(1, removeLine("")), 1, ErrCorruptLog, []string{"empty path"}},
		{"dot-dot path", base().commit(1, addLine("../other/x.parquet", 1)), 1, ErrCorruptLog, []string{"inside the table"}},
		{"encoded dot-dot path", base().commit(1, addLine("a/%2E%2E/%2E%2E/x", 1)), 1, ErrCorruptLog, []string{"inside the table"}},
		{"path into the log", base().commit(1, addLine("_delta_log/00000000000000000009.json", 1)), 1,
			ErrCorruptLog, []string{"_delta_log"}},
		{"absolute URI", base().commit(1, addLine("s3://other-bucket/x.parquet", 1)), 1,
			ErrUnsupported, []string{"absolute path", "s3://other-bucket/x.parquet"}},
		{"rooted path", base().commit(1, addLine("/etc/passwd", 1)), 1, ErrUnsupported, []string{"absolute path"}},
		{"two actions on a line", base().commit(1, `{"add":{"path":"b","size":1},"remove":{"path":"a.parquet"}}`), 1,
			ErrCorruptLog, []string{"several actions"}},
		{"reader version 4", base().commit(1, `{"protocol":{"minReaderVersion":4,"minWriterVersion":7}}`), 1,
			ErrUnsupported, []string{"minReaderVersion 4"}},
		{"unsupported reader feature",
			base().commit(1, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["columnMapping","v2Checkpoint"],"writerFeatures":["columnMapping","v2Checkpoint"]}}`),
			1, ErrUnsupported, []string{`"v2Checkpoint"`}},
		{"catalog managed", base().commit(1, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["catalogManaged"],"writerFeatures":["catalogManaged"]}}`),
			-1, ErrUnsupported, []string{`"catalogManaged"`}},
		{"protocol without versions", base().commit(1, `{"protocol":{"minWriterVersion":2}}`), 1, ErrCorruptLog, []string{"protocol"}},
		{"no metaData", newMemTable().commit(0, protocolLine, addLine("a", 1)), 0, ErrCorruptLog, []string{"metaData"}},
		{"no commit 0", newMemTable().commit(1, protocolLine, metaLine), -1, ErrCorruptLog, []string{"complete"}},
		{"only a v2 checkpoint", func() *memTable {
			m := newMemTable().commit(6, addLine("x", 1))
			m.objects["_delta_log/00000000000000000005.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json"] = []byte(`{}`)
			return m
		}(), -1, ErrUnsupported, []string{"v2"}},
		{"p deletion vector", base().commit(1, `{"add":{"path":"b","size":1,"deletionVector":{"storageType":"p","pathOrInlineDv":"s3://b/dv.bin","sizeInBytes":4,"cardinality":1}}}`),
			1, ErrUnsupported, []string{"deletion vector", "s3://b/dv.bin"}},
		{"bad deletion vector type", base().commit(1, `{"add":{"path":"b","size":1,"deletionVector":{"storageType":"x","pathOrInlineDv":"abc","sizeInBytes":4,"cardinality":1}}}`),
			1, ErrCorruptLog, []string{"storageType"}},
		{"overflowing version", func() *memTable {
			m := base()
			m.objects["_delta_log/99999999999999999999.json"] = []byte(protocolLine)
			return m
		}(), -1, ErrCorruptLog, []string{"out of range"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.version < 0 {
				_, err = Latest(context.Background(), tc.table.log(), tc.table.fetch, Limits{})
			} else {
				_, err = At(context.Background(), tc.table.log(), tc.version, tc.table.fetch, Limits{})
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, s := range tc.msg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q does not say %q", err, s)
				}
			}
		})
	}
}

func TestReconcile(t *testing.T) {
	m := base().
		commit(1, infoLine, addLine("b%20c/x%3Dy.parquet", 20), addLine("d.parquet", 5)).
		commit(2, removeLine("a.parquet"), removeLine("d.parquet")).
		commit(3, addLine("a.parquet", 11), "", `{"txn":{"appId":"x","version":1}}`, `{"cdc":{"path":"_change_data/c.parquet","size":1}}`).
		commit(4, addLine("a.parquet", 12), `{"unknownAction":{"path":"/etc/passwd"}}`, `{"ADD":{"path":"z.parquet","size":1}}`)
	cases := []struct {
		v    int64
		want []File
	}{
		{0, []File{{"a.parquet", 10}}},
		{1, []File{{"a.parquet", 10}, {"b c/x=y.parquet", 20}, {"d.parquet", 5}}},
		{2, []File{{"b c/x=y.parquet", 20}}},
		{3, []File{{"a.parquet", 11}, {"b c/x=y.parquet", 20}}}, // removed, then added again
		{4, []File{{"a.parquet", 12}, {"b c/x=y.parquet", 20}}}, // the later add's size wins
	}
	for _, tc := range cases {
		snap, err := At(context.Background(), m.log(), tc.v, m.fetch, Limits{})
		if err != nil {
			t.Fatalf("At(%d): %v", tc.v, err)
		}
		if diff := cmp.Diff(tc.want, snap.Files); diff != "" {
			t.Errorf("At(%d) (-want +got):\n%s", tc.v, diff)
		}
	}
	snap, err := Latest(context.Background(), m.log(), m.fetch, Limits{})
	if err != nil || snap.Version != 4 {
		t.Fatalf("Latest = %d, %v; want 4", snap.Version, err)
	}
	if snap.MetadataID != "0b6a1c55-5b0e-4a4f-a3f7-1c7a3d9e0f11" || snap.Protocol.MinReaderVersion != 1 {
		t.Errorf("metadata %q protocol %+v", snap.MetadataID, snap.Protocol)
	}
}

// TestLatestSkipsIncompleteTail: a commit listed past a gap is not part of a complete log, so
// Latest stops before the gap instead of failing; At of that version reports the gap.
func TestLatestSkipsIncompleteTail(t *testing.T) {
	m := base().commit(1, addLine("b", 1)).commit(3, addLine("c", 1))
	snap, err := Latest(context.Background(), m.log(), m.fetch, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 1 {
		t.Errorf("Latest = %d, want 1", snap.Version)
	}
	if _, err := At(context.Background(), m.log(), 3, m.fetch, Limits{}); !errors.Is(err, ErrCorruptLog) {
		t.Errorf("At(3) = %v, want ErrCorruptLog", err)
	}
}

func TestProtocolReplacedByLaterCommit(t *testing.T) {
	m := base().
		commit(1, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["vacuumProtocolCheck"],"writerFeatures":["vacuumProtocolCheck"]}}`).
		commit(2, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors","columnMapping"],"writerFeatures":[]}}`)
	snap, err := Latest(context.Background(), m.log(), m.fetch, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors", "columnMapping"}, WriterFeatures: []string{}}
	if diff := cmp.Diff(want, snap.Protocol); diff != "" {
		t.Errorf("protocol (-want +got):\n%s", diff)
	}
}

func TestLimits(t *testing.T) {
	long := base().commit(1, addLine(strings.Repeat("x", 200), 1))
	many := base().commit(1, addLine("b", 1), addLine("c", 1), addLine("d", 1))
	commits := base()
	for v := int64(1); v <= 5; v++ {
		commits.commit(v, infoLine)
	}
	cases := []struct {
		name  string
		table *memTable
		lim   Limits
		limit string
	}{
		{"line", long, Limits{MaxLineBytes: 100}, "MaxLineBytes"},
		{"commit bytes", long, Limits{MaxCommitBytes: 150}, "MaxCommitBytes"},
		{"actions", many, Limits{MaxActions: 3}, "MaxActions"},
		{"commits", commits, Limits{MaxCommits: 5}, "MaxCommits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Latest(context.Background(), tc.table.log(), tc.table.fetch, tc.lim)
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.limit) {
				t.Fatalf("err = %v, want ErrTooLarge naming %s", err, tc.limit)
			}
			if _, err := Latest(context.Background(), tc.table.log(), tc.table.fetch, Limits{}); err != nil {
				t.Errorf("with default limits: %v", err)
			}
		})
	}
}

// TestListedSizeOverLimit: a commit listed as too large is refused before it is fetched, and a
// listing that understates the size is caught while reading.
func TestListedSizeOverLimit(t *testing.T) {
	m := base()
	limit := int64(len(m.objects[commitKey(0)]) + 10)
	m.commit(1, addLine(strings.Repeat("y", int(limit)), 1))
	log := m.log()
	_, err := Latest(context.Background(), log, m.fetch, Limits{MaxCommitBytes: limit})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if diff := cmp.Diff([]string{commitKey(0)}, m.fetched); diff != "" {
		t.Errorf("the oversized commit must not be fetched (-want +fetched):\n%s", diff)
	}
	for i := range log {
		log[i].Size = 1
	}
	if _, err := Latest(context.Background(), log, m.fetch, Limits{MaxCommitBytes: limit}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("understated size: err = %v", err)
	}
}

func TestCancellation(t *testing.T) {
	m := base()
	for v := int64(1); v <= 50; v++ {
		m.commit(v, addLine("f", v))
	}
	ctx, cancel := context.WithCancel(context.Background())
	fetch := func(c context.Context, key string) (io.ReadCloser, error) {
		if key == commitKey(10) {
			cancel()
		}
		return m.fetch(c, key)
	}
	_, err := Latest(ctx, m.log(), fetch, Limits{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(m.fetched); n > 12 {
		t.Errorf("fetched %d commits after cancellation", n)
	}
}
