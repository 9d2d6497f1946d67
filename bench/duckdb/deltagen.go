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

package duckdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The delta layout writes each table as a Delta Lake table, DIR/<table>/, with a history a cache of
// tables must handle: one append per batch (commit 0 also creates the table), then, for tables of
// more than one batch, an overwrite that rewrites the first batch's rows into a new file (a remove
// and an add, the data unchanged), and a delete of every 100th row of the last batch (a remove, and
// an add of the rest). A table of 8 batches has 10 commits; its newest version holds 8 files and its
// folder 10. The log is JSON commits only (no checkpoint): Delta reader protocol 1, writer 2.

// deltaAction is one line of a Delta commit: exactly one of its fields is set.
type deltaAction struct {
	CommitInfo *deltaCommitInfo `json:"commitInfo,omitempty"`
	Protocol   *deltaProtocol   `json:"protocol,omitempty"`
	MetaData   *deltaMetaData   `json:"metaData,omitempty"`
	Add        *deltaAdd        `json:"add,omitempty"`
	Remove     *deltaRemove     `json:"remove,omitempty"`
}

type deltaCommitInfo struct {
	Timestamp int64  `json:"timestamp"`
	Operation string `json:"operation"`
}

type deltaProtocol struct {
	MinReaderVersion int `json:"minReaderVersion"`
	MinWriterVersion int `json:"minWriterVersion"`
}

type deltaMetaData struct {
	ID               string            `json:"id"`
	Format           deltaFormat       `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
	CreatedTime      int64             `json:"createdTime"`
}

type deltaFormat struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

type deltaAdd struct {
	Path             string            `json:"path"`
	PartitionValues  map[string]string `json:"partitionValues"`
	Size             int64             `json:"size"`
	ModificationTime int64             `json:"modificationTime"`
	DataChange       bool              `json:"dataChange"`
	Stats            string            `json:"stats,omitempty"`
}

type deltaRemove struct {
	Path              string `json:"path"`
	DeletionTimestamp int64  `json:"deletionTimestamp"`
	DataChange        bool   `json:"dataChange"`
}

// deltaTable writes one Delta table's files and commits.
type deltaTable struct {
	ctx     context.Context
	db      *sql.DB
	name    string // the TPC-H table
	dir     string
	version int
	now     time.Time
	opts    string // COPY options
}

// writeDeltaTable writes table t (n rows) as a Delta table of batches appends, an overwrite and a
// delete.
func writeDeltaTable(ctx context.Context, db *sql.DB, out, t string, n int64, batches int, copyOpts string) error {
	d := &deltaTable{ctx: ctx, db: db, name: t, dir: filepath.Join(out, t), now: time.Now(), opts: copyOpts}
	if err := os.MkdirAll(filepath.Join(d.dir, "_delta_log"), 0o755); err != nil {
		return err
	}
	schema, err := d.schema()
	if err != nil {
		return err
	}
	for b := range batches {
		q := fmt.Sprintf("SELECT * FROM %s WHERE rowid * %d // %d = %d", t, batches, max(n, 1), b)
		add, err := d.writeFile(fmt.Sprintf("part-%05d.parquet", b), q)
		if err != nil {
			return err
		}
		actions := []deltaAction{{Add: add}}
		if b == 0 {
			actions = append([]deltaAction{{Protocol: &deltaProtocol{MinReaderVersion: 1, MinWriterVersion: 2}}, {MetaData: d.metaData(schema)}}, actions...)
		}
		if err := d.commit("WRITE", actions); err != nil {
			return err
		}
	}
	if batches < 2 {
		return nil
	}
	first := fmt.Sprintf("part-%05d.parquet", 0)
	if err := d.rewrite(first, "part-00000-overwrite.parquet", "", "WRITE"); err != nil {
		return err
	}
	last := fmt.Sprintf("part-%05d.parquet", batches-1)
	return d.rewrite(last, fmt.Sprintf("part-%05d-delete.parquet", batches-1), "WHERE file_row_number % 100 <> 0", "DELETE")
}

// rewrite commits the rows of file old that where keeps as file to, in place of old.
func (d *deltaTable) rewrite(old, to, where, operation string) error {
	q := fmt.Sprintf("SELECT * EXCLUDE (file_row_number) FROM read_parquet(%s, file_row_number = true) %s", quote(filepath.Join(d.dir, old)), where)
	add, err := d.writeFile(to, q)
	if err != nil {
		return err
	}
	return d.commit(operation, []deltaAction{{Remove: &deltaRemove{Path: old, DeletionTimestamp: d.now.UnixMilli(), DataChange: true}}, {Add: add}})
}

// writeFile writes the rows of query as the table's file name, and returns its add action.
func (d *deltaTable) writeFile(name, query string) (*deltaAdd, error) {
	path := filepath.Join(d.dir, name)
	if _, err := d.db.ExecContext(d.ctx, fmt.Sprintf("COPY (%s) TO %s (%s)", query, quote(path), d.opts)); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	var rows int64
	if err := d.db.QueryRowContext(d.ctx, "SELECT count(*) FROM read_parquet("+quote(path)+")").Scan(&rows); err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return &deltaAdd{Path: name, PartitionValues: map[string]string{}, Size: fi.Size(), ModificationTime: d.now.UnixMilli(),
		DataChange: true, Stats: fmt.Sprintf(`{"numRecords":%d}`, rows)}, nil
}

// commit writes the next version's commit: every action on its own line, written whole and then
// renamed into place, as a writer's put-if-absent would make it appear.
func (d *deltaTable) commit(operation string, actions []deltaAction) error {
	var b strings.Builder
	actions = append([]deltaAction{{CommitInfo: &deltaCommitInfo{Timestamp: d.now.UnixMilli(), Operation: operation}}}, actions...)
	for _, a := range actions {
		line, err := json.Marshal(a)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(d.dir, "_delta_log", fmt.Sprintf("%020d.json", d.version))
	if err := os.WriteFile(path+".tmp", []byte(b.String()), 0o644); err != nil {
		return err
	}
	d.version++
	return os.Rename(path+".tmp", path)
}

func (d *deltaTable) metaData(schema string) *deltaMetaData {
	return &deltaMetaData{ID: newUUID(), Format: deltaFormat{Provider: "parquet", Options: map[string]string{}}, SchemaString: schema,
		PartitionColumns: []string{}, Configuration: map[string]string{}, CreatedTime: d.now.UnixMilli()}
}

// schema is the table's schema as a Delta schemaString, from DuckDB's column types.
func (d *deltaTable) schema() (string, error) {
	rows, err := d.db.QueryContext(d.ctx, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position", d.name)
	if err != nil {
		return "", err
	}
	defer func() { _ = rows.Close() }()
	type field struct {
		Name     string            `json:"name"`
		Type     string            `json:"type"`
		Nullable bool              `json:"nullable"`
		Metadata map[string]string `json:"metadata"`
	}
	var fields []field
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return "", err
		}
		dt, err := deltaType(typ)
		if err != nil {
			return "", fmt.Errorf("table %s column %s: %w", d.name, name, err)
		}
		fields = append(fields, field{Name: name, Type: dt, Nullable: true, Metadata: map[string]string{}})
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	b, err := json.Marshal(struct {
		Type   string  `json:"type"`
		Fields []field `json:"fields"`
	}{"struct", fields})
	return string(b), err
}

var decimalType = regexp.MustCompile(`^DECIMAL\((\d+),\s*(\d+)\)$`)

// deltaType is the Delta primitive type of a DuckDB column type.
func deltaType(duck string) (string, error) {
	switch duck {
	case "INTEGER":
		return "integer", nil
	case "BIGINT":
		return "long", nil
	case "DOUBLE":
		return "double", nil
	case "VARCHAR":
		return "string", nil
	case "DATE":
		return "date", nil
	}
	if m := decimalType.FindStringSubmatch(duck); m != nil {
		return "decimal(" + m[1] + "," + m[2] + ")", nil
	}
	return "", fmt.Errorf("type %s has no Delta type here", duck)
}

// newUUID is a random (version 4) UUID: a table's id.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
