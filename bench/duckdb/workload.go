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
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/canon"
	"github.com/pqcache/pqcache/bench/workload"
)

// CreateTables makes each table of a resolved workload a view over its files, local or s3:// (load
// httpfs first: LoadHTTPFS).
func CreateTables(ctx context.Context, db *sql.DB, r *workload.Resolved) error {
	names := make([]string, 0, len(r.Tables))
	for n := range r.Tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t := r.Tables[name]
		files := make([]string, len(t.Files))
		for i, f := range t.Files {
			files[i] = quote(f)
		}
		opts := ""
		if t.Hive {
			opts += ", hive_partitioning = true"
		}
		if t.FileRowNumber {
			opts += ", file_row_number = true"
		}
		q := fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM read_parquet([%s]%s)", quoteIdent(name), strings.Join(files, ", "), opts)
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
	}
	return nil
}

// RunSQL runs one query and writes its rows to w in the canonical row format (bench/canon), one per
// line, and returns how many it wrote.
func RunSQL(ctx context.Context, db *sql.DB, query string, w io.Writer) (int64, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return 0, err
	}
	// Only read: a failed read shows in EachRow's error, not in Close's.
	defer func() { _ = rows.Close() }()
	var count int64
	err = EachRow(rows, func(fields []string) error {
		count++
		_, err := io.WriteString(w, canon.Row(fields)+"\n")
		return err
	})
	return count, err
}

// LoadHTTPFS loads DuckDB's httpfs extension from the file at ext (signed by DuckDB, for exactly
// this DuckDB version: see hack/install-httpfs.sh), and configures S3 from s3 and the standard AWS
// credentials in the environment.
func LoadHTTPFS(ctx context.Context, db *sql.DB, ext string, s3 *wire.S3Access) error {
	if _, err := db.ExecContext(ctx, "LOAD "+quote(ext)); err != nil {
		return fmt.Errorf("loading the httpfs extension %s: %w", ext, err)
	}
	secret, err := s3Secret(s3, os.Getenv)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, secret); err != nil {
		return fmt.Errorf("configuring S3: %w", err)
	}
	return trustCABundle(ctx, db, os.Getenv("AWS_CA_BUNDLE"))
}

// trustCABundle makes httpfs check the endpoint's certificate against bundle (AWS_CA_BUNDLE, as a
// BenchRun with a CA bundle or the node's S3 endpoint sets it), as every AWS SDK does. httpfs checks
// no certificate by default; without a bundle that default is kept.
func trustCABundle(ctx context.Context, db *sql.DB, bundle string) error {
	if bundle == "" {
		return nil
	}
	for _, stmt := range []string{"SET ca_cert_file = " + quote(bundle), "SET enable_server_cert_verification = true"} {
		if _, err := db.ExecContext(ctx, stmt); err != nil { //nolint:gosec // G701: the path is a quoted string literal (quote doubles its quotes), set by the Job's own environment
			return fmt.Errorf("trusting the CA bundle %s: %w", bundle, err)
		}
	}
	return nil
}

// defaultRegion signs requests when neither the Dataset nor the environment names a region, as
// pqcache's sync and Polars do: S3-compatible stores that check the region expect us-east-1 then, and
// reject DuckDB's empty region (versitygw: AuthorizationHeaderMalformed). A bucket in another AWS
// region needs the Dataset's region, as with every client.
const defaultRegion = "us-east-1"

// s3Secret is the CREATE SECRET statement for the store: its endpoint (host and port, with TLS or not
// by the URL's scheme), region and addressing, and the access key from the environment. Without an
// access key DuckDB reads public objects only: the credential chain needs the aws extension, which
// is not installed.
func s3Secret(s3 *wire.S3Access, getenv func(string) string) (string, error) {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+" "+quote(v))
		}
	}
	var a wire.S3Access
	if s3 != nil {
		a = *s3
	}
	if a.Endpoint == "" {
		a.Endpoint = getenv("AWS_ENDPOINT_URL")
	}
	if a.Region == "" {
		a.Region = cmp.Or(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"), defaultRegion)
	}
	parts = append(parts, "TYPE s3")
	add("KEY_ID", getenv(wire.EnvAccessKeyID))
	add("SECRET", getenv(wire.EnvSecretAccessKey))
	add("SESSION_TOKEN", getenv(wire.EnvSessionToken))
	add("REGION", a.Region)
	if a.Endpoint != "" {
		u, err := url.Parse(a.Endpoint)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("S3 endpoint %q: want a URL such as http://s3.example:9000", a.Endpoint)
		}
		add("ENDPOINT", u.Host)
		parts = append(parts, fmt.Sprintf("USE_SSL %t", u.Scheme != "http"))
	}
	if a.PathStyle {
		add("URL_STYLE", "path")
	}
	return "CREATE OR REPLACE SECRET pqcache (" + strings.Join(parts, ", ") + ")", nil
}

// quoteIdent quotes a SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
