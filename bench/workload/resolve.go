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

package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/pqcache/pqcache/api/wire"
)

// Resolved is a workload whose tables are lists of files: what each query process reads (as JSON).
type Resolved struct {
	// Workload names the workload.
	Workload string `json:"workload"`
	// Tables maps each table name to its files.
	Tables map[string]ResolvedTable `json:"tables"`
	// Queries are the queries of the run, in order.
	Queries []Query `json:"queries"`
	// S3 is how the s3:// files are reached; the credentials are the engine's environment's
	// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN).
	S3 *wire.S3Access `json:"s3,omitempty"`
}

// ResolvedTable is one table's files: absolute local paths or s3:// URLs.
type ResolvedTable struct {
	Files         []string `json:"files"`
	Hive          bool     `json:"hive,omitempty"`
	FileRowNumber bool     `json:"fileRowNumber,omitempty"`
}

// Query returns the query named name.
func (r *Resolved) Query(name string) (Query, error) {
	for _, q := range r.Queries {
		if q.Name == name {
			return q, nil
		}
	}
	return Query{}, fmt.Errorf("the workload %s has no query %q", r.Workload, name)
}

// Read reads a resolved workload from a file written by Write.
func Read(file string) (*Resolved, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r Resolved
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reading the resolved workload %s: %w", file, err)
	}
	return &r, nil
}

// Write writes the resolved workload as JSON to file.
func (r *Resolved) Write(file string) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

// Lister reads a data root: a local directory (Dir) or a bucket prefix (the CLI's S3 lister).
type Lister interface {
	// List returns the files under dir, recursively, as slash-separated paths relative to the root,
	// sorted; a dir that does not exist lists nothing. dir "" is the root.
	List(ctx context.Context, dir string) ([]string, error)
	// Exists says whether the file rel exists.
	Exists(ctx context.Context, rel string) (bool, error)
	// Location is what an engine opens for rel: an absolute path or an s3:// URL.
	Location(rel string) string
}

// Source is where a run reads: the data root, and optionally prefixes of it read from another root
// (the fresh partitions, staged or straight from the bucket).
type Source struct {
	Data Lister
	// S3 is how the engines reach s3:// files, when either root is a bucket.
	S3 *wire.S3Access
	// Fresh, when not nil, replaces the files under FreshPrefixes (relative to the data root).
	Fresh         Lister
	FreshPrefixes []string
}

// MissingTablesError lists the tables a data set has no files for.
type MissingTablesError struct {
	Tables []string
	Paths  []string
}

func (e *MissingTablesError) Error() string {
	parts := make([]string, len(e.Tables))
	for i := range e.Tables {
		parts[i] = fmt.Sprintf("%s (%s)", e.Tables[i], e.Paths[i])
	}
	return fmt.Sprintf("the data has no Parquet files for table%s %s", plural(len(parts), "", "s"), strings.Join(parts, ", "))
}

// Resolve lists the files of every table queries read (every table of the workload: a query's SQL
// is not parsed), and fails with a MissingTablesError naming each table that has none, before any
// query runs.
func Resolve(ctx context.Context, w *Workload, queries []Query, src Source) (*Resolved, error) {
	out := &Resolved{Workload: w.Name, Tables: map[string]ResolvedTable{}, Queries: queries, S3: src.S3}
	missing := &MissingTablesError{}
	names := make([]string, 0, len(w.Tables))
	for n := range w.Tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t := w.Tables[name]
		files, err := tableFiles(ctx, src, t.Path)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", name, err)
		}
		if len(files) == 0 {
			missing.Tables, missing.Paths = append(missing.Tables, name), append(missing.Paths, t.Path)
			continue
		}
		out.Tables[name] = ResolvedTable{Files: files, Hive: t.Hive, FileRowNumber: t.FileRowNumber}
	}
	if len(missing.Tables) > 0 {
		return nil, missing
	}
	return out, nil
}

// tableFiles lists one table's files: from the data root, except under the fresh prefixes, where they
// come from the fresh root.
func tableFiles(ctx context.Context, src Source, p string) ([]string, error) {
	isFresh := func(rel string) bool {
		for _, fp := range src.FreshPrefixes {
			if strings.HasPrefix(rel, strings.TrimPrefix(fp, "/")) {
				return true
			}
		}
		return false
	}
	var files []string
	for _, root := range []Lister{src.Data, src.Fresh} {
		if root == nil {
			continue
		}
		rels, err := match(ctx, root, p)
		if err != nil {
			return nil, err
		}
		for _, rel := range rels {
			if (root == src.Fresh) == isFresh(rel) {
				files = append(files, root.Location(rel))
			}
		}
	}
	return files, nil
}

// match finds the files path p names under one root: a glob's matches, a .parquet file, or a folder's
// Parquet files (p.parquet when that file exists).
func match(ctx context.Context, root Lister, p string) ([]string, error) {
	p = strings.TrimSuffix(path.Clean(p), "/")
	switch {
	case strings.ContainsAny(p, "*?[{"):
		base, _ := doublestar.SplitPattern(p)
		if base == "." {
			base = ""
		}
		all, err := root.List(ctx, base)
		if err != nil {
			return nil, err
		}
		return slices.DeleteFunc(all, func(rel string) bool { ok, _ := doublestar.Match(p, rel); return !ok }), nil
	case strings.HasSuffix(p, ".parquet"):
		ok, err := root.Exists(ctx, p)
		if err != nil || !ok {
			return nil, err
		}
		return []string{p}, nil
	}
	if ok, err := root.Exists(ctx, p+".parquet"); err != nil {
		return nil, err
	} else if ok {
		return []string{p + ".parquet"}, nil
	}
	all, err := root.List(ctx, p)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(rel string) bool { return !strings.HasSuffix(rel, ".parquet") }), nil
}

// Dir lists a local directory.
type Dir string

// List walks dir under the root.
func (d Dir) List(_ context.Context, dir string) ([]string, error) {
	root := string(d)
	var out []string
	err := filepath.WalkDir(filepath.Join(root, filepath.FromSlash(dir)), func(p string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		if e.IsDir() {
			if e.Name() == ".pqcache" {
				return filepath.SkipDir // the cache's own bookkeeping, never data
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(out)
	return out, err
}

// Exists stats the file.
func (d Dir) Exists(_ context.Context, rel string) (bool, error) {
	info, err := os.Stat(filepath.Join(string(d), filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil && !info.IsDir(), err
}

// Location is the file's absolute path.
func (d Dir) Location(rel string) string {
	abs, err := filepath.Abs(filepath.Join(string(d), filepath.FromSlash(rel)))
	if err != nil {
		return filepath.Join(string(d), filepath.FromSlash(rel))
	}
	return abs
}

// ReadsS3 says whether any table has a file in a bucket.
func (r *Resolved) ReadsS3() bool {
	for _, t := range r.Tables {
		for _, f := range t.Files {
			if strings.HasPrefix(f, "s3://") {
				return true
			}
		}
	}
	return false
}
