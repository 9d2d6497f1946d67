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
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"
)

// specDV is PROTOCOL.md's "JSON Example 1": a relative deletion vector with random prefix "ab".
const (
	specDV    = "ab^-aqEH.-t@S}K{vb[*k^"
	specDVKey = "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
)

func ptr[T any](v T) *T { return &v }

// checkpointBytes writes rows as a checkpoint whose columns are all nullable, as Spark writes them
// (the delta-rs fixture in testdata/history covers the required-column flavour).
func checkpointBytes(t *testing.T, rows ...checkpointRow) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[checkpointRow](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func cpProtocol(reader int32, features ...string) checkpointRow {
	return checkpointRow{Protocol: &checkpointProtocol{
		MinReaderVersion: ptr(reader), MinWriterVersion: ptr(int32(7)), ReaderFeatures: features, WriterFeatures: features,
	}}
}

func cpMeta() checkpointRow {
	return checkpointRow{MetaData: &checkpointMetaData{ID: ptr("cp-table"), PartitionColumns: []string{"p"}}}
}

func cpAdd(path string, size int64) checkpointRow {
	return checkpointRow{Add: &checkpointAdd{Path: ptr(path), Size: ptr(size)}}
}

// TestCheckpointWithDeletionVectors reads a checkpoint holding a file with a deletion vector, then
// commits that swap the vector and try to remove the file with a stale one.
func TestCheckpointWithDeletionVectors(t *testing.T) {
	m := newMemTable()
	withDV := cpAdd("p=1/f.parquet", 100)
	withDV.Add.DeletionVector = &checkpointDV{StorageType: ptr("u"), PathOrInlineDv: ptr(specDV), Offset: ptr(int32(4))}
	m.objects[LogDir+"00000000000000000002.checkpoint.parquet"] = checkpointBytes(t,
		cpProtocol(3, "deletionVectors"), cpMeta(), withDV, cpAdd("p=1/g.parquet", 7))
	inline := `{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":6}`
	m.commit(3,
		`{"remove":{"path":"p=1/f.parquet","dataChange":true,"deletionVector":{"storageType":"u","pathOrInlineDv":"`+specDV+`","offset":4,"sizeInBytes":40,"cardinality":6}}}`,
		`{"add":{"path":"p=1/f.parquet","size":100,"dataChange":true,"deletionVector":`+inline+`}}`)
	m.commit(4, removeLine("p=1/f.parquet")) // no DV: a different logical file, so nothing goes

	snap, err := At(context.Background(), m.log(), 2, m.fetch, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{specDVKey}, snap.DeletionVectorFiles); diff != "" {
		t.Errorf("DV files at 2 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]File{{"p=1/f.parquet", 100}, {"p=1/g.parquet", 7}}, snap.Files); diff != "" {
		t.Errorf("files at 2 (-want +got):\n%s", diff)
	}
	if snap.MetadataID != "cp-table" || !cmp.Equal(snap.PartitionColumns, []string{"p"}) {
		t.Errorf("metadata %q %v", snap.MetadataID, snap.PartitionColumns)
	}

	snap, err = Latest(context.Background(), m.log(), m.fetch, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.DeletionVectorFiles) != 0 || len(snap.Files) != 2 || snap.Version != 4 {
		t.Errorf("at 4: files %v, DV files %v", snap.Files, snap.DeletionVectorFiles)
	}
}

// TestMultiPartCheckpointFallsBack: a multi-part checkpoint with a part missing is skipped for an
// older complete one; once every part is listed it is used.
func TestMultiPartCheckpointFallsBack(t *testing.T) {
	m := newMemTable()
	m.commit(0, protocolLine, metaLine, addLine("a", 1))
	m.commit(1, addLine("b", 2))
	m.objects[LogDir+"00000000000000000001.checkpoint.parquet"] = checkpointBytes(t,
		cpProtocol(1), cpMeta(), cpAdd("a", 1), cpAdd("b", 2))
	m.commit(2, addLine("c", 3))
	m.commit(3, removeLine("a"))
	part1 := LogDir + "00000000000000000003.checkpoint.0000000001.0000000002.parquet"
	part2 := LogDir + "00000000000000000003.checkpoint.0000000002.0000000002.parquet"
	m.objects[part1] = checkpointBytes(t, cpProtocol(1), cpMeta(), cpAdd("b", 2))
	m.commit(4, addLine("d", 4))

	snap, err := Latest(context.Background(), m.log(), m.fetch, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{LogDir + "00000000000000000001.checkpoint.parquet", commitKey(2), commitKey(3), commitKey(4)}
	if diff := cmp.Diff(want, snap.LogKeys); diff != "" {
		t.Errorf("with a part missing (-want +got):\n%s", diff)
	}
	wantFiles := []File{{"b", 2}, {"c", 3}, {"d", 4}}
	if diff := cmp.Diff(wantFiles, snap.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}

	m.objects[part2] = checkpointBytes(t, cpAdd("c", 3))
	snap, err = Latest(context.Background(), m.log(), m.fetch, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{part1, part2, commitKey(4)}, snap.LogKeys); diff != "" {
		t.Errorf("with every part (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantFiles, snap.Files); diff != "" {
		t.Errorf("files from parts (-want +got):\n%s", diff)
	}
}

func TestCheckpointErrors(t *testing.T) {
	good := func(t *testing.T) []byte { return checkpointBytes(t, cpProtocol(1), cpMeta(), cpAdd("a", 1)) }
	cases := []struct {
		name string
		body func(t *testing.T) []byte
		lim  Limits
		want error
		msg  string
	}{
		{"not parquet", func(*testing.T) []byte { return []byte("PAR1 this is not a checkpoint PAR1") }, Limits{}, ErrCorruptLog, "does not parse"},
		{"truncated", func(t *testing.T) []byte { b := good(t); return b[:len(b)/2] }, Limits{}, ErrCorruptLog, "does not parse"},
		{"no protocol", func(t *testing.T) []byte { return checkpointBytes(t, cpMeta(), cpAdd("a", 1)) }, Limits{}, ErrCorruptLog, "protocol"},
		{"unsupported feature", func(t *testing.T) []byte {
			return checkpointBytes(t, cpProtocol(3, "columnMapping", "variantType"), cpMeta())
		}, Limits{}, ErrUnsupported, `"variantType"`},
		{"sidecar", func(t *testing.T) []byte {
			return checkpointBytes(t, cpProtocol(1), cpMeta(), checkpointRow{Sidecar: &checkpointSidecar{Path: ptr("x.parquet")}})
		}, Limits{}, ErrUnsupported, "sidecar"},
		{"escaping add", func(t *testing.T) []byte { return checkpointBytes(t, cpProtocol(1), cpMeta(), cpAdd("../x", 1)) }, Limits{}, ErrCorruptLog, "row 3"},
		{"add without size", func(t *testing.T) []byte {
			return checkpointBytes(t, cpProtocol(1), cpMeta(), checkpointRow{Add: &checkpointAdd{Path: ptr("a")}})
		}, Limits{}, ErrCorruptLog, "size"},
		{"over byte limit", good, Limits{MaxCheckpointBytes: 100}, ErrTooLarge, "MaxCheckpointBytes"},
		{"over row limit", good, Limits{MaxActions: 2}, ErrTooLarge, "MaxActions"},
	}
	key := LogDir + "00000000000000000000.checkpoint.parquet"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemTable()
			m.objects[key] = tc.body(t)
			_, err := Latest(context.Background(), m.log(), m.fetch, Limits{TempDir: t.TempDir(), MaxCheckpointBytes: tc.lim.MaxCheckpointBytes, MaxActions: tc.lim.MaxActions})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v saying %q", err, tc.want, tc.msg)
			}
			if !errors.Is(tc.want, ErrTooLarge) && !strings.Contains(err.Error(), "checkpoint") {
				t.Errorf("message %q does not name the checkpoint", err)
			}
		})
	}
}

// TestCheckpointSpoolCleanedUp: the temporary copy of a checkpoint is removed afterwards.
func TestCheckpointSpoolCleanedUp(t *testing.T) {
	dir := t.TempDir()
	m := newMemTable()
	m.objects[LogDir+"00000000000000000000.checkpoint.parquet"] = checkpointBytes(t, cpProtocol(1), cpMeta(), cpAdd("a", 1))
	if _, err := Latest(context.Background(), m.log(), m.fetch, Limits{TempDir: dir}); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepathGlob(dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
