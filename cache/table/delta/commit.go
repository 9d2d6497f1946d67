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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// readCommit parses one newline-delimited JSON commit and hands each action to fn in file order.
// A line that is not a JSON object, including a truncated last line, makes the commit corrupt:
// Delta writes a commit atomically, so a partial one was never committed and must not be trusted.
// Errors name key and the 1-based line.
func readCommit(ctx context.Context, r io.Reader, key string, lim Limits, fn func(action) error) error {
	lines := newLineReader(r, lim)
	for n := 1; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, err := lines.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s line %d: %w", key, n, err)
		}
		a, err := parseLine(line)
		if err == nil && a.Kind != actNone {
			err = fn(a)
		}
		if err != nil {
			return fmt.Errorf("%s line %d: %w", key, n, err)
		}
	}
}

// parseLine decodes one line. Field names are matched exactly (encoding/json alone would also take
// "ADD" or "Path", which Delta's own readers ignore), and unknown actions and fields are skipped.
func parseLine(line []byte) (action, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return action{}, nil
	}
	top, err := objectFields(line)
	if err != nil {
		return action{}, err
	}
	var found []string
	for _, name := range []string{"add", "remove", "protocol", "metaData"} {
		if v, ok := top[name]; ok && !isNull(v) {
			found = append(found, name)
		}
	}
	switch len(found) {
	case 0:
		return action{}, nil
	case 1:
		a, err := parseAction(found[0], top[found[0]])
		if err != nil {
			return action{}, fmt.Errorf("%s: %w", found[0], err)
		}
		return a, nil
	}
	return action{}, fmt.Errorf("%w: one line holds several actions %v", ErrCorruptLog, found)
}

// parseAction decodes the body of one add, remove, protocol or metaData action.
func parseAction(name string, body json.RawMessage) (action, error) {
	f, err := objectFields(body)
	if err != nil {
		return action{}, err
	}
	var (
		path, id     *string
		size         *int64
		dv           *deletionVector
		minR, minW   *int64
		rFeat, wFeat []string
		partCols     []string
	)
	switch name {
	case "add", "remove":
		err = errors.Join(field(f, "path", &path), field(f, "size", &size), field(f, "deletionVector", &dv))
		if err != nil {
			return action{}, err
		}
		if name == "add" {
			return newFileAction(actAdd, path, size, dv)
		}
		return newFileAction(actRemove, path, nil, dv)
	case "protocol":
		err = errors.Join(field(f, "minReaderVersion", &minR), field(f, "minWriterVersion", &minW),
			field(f, "readerFeatures", &rFeat), field(f, "writerFeatures", &wFeat))
		if err != nil {
			return action{}, err
		}
		return newProtocol(minR, minW, rFeat, wFeat)
	default:
		if err = errors.Join(field(f, "id", &id), field(f, "partitionColumns", &partCols)); err != nil {
			return action{}, err
		}
		return newMetaData(id, partCols)
	}
}

// objectFields splits a JSON object into its members, keyed by exact name.
func objectFields(b []byte) (map[string]json.RawMessage, error) {
	if len(b) == 0 || b[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrCorruptLog)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptLog, err)
	}
	return m, nil
}

// field decodes member name of f into dst, leaving dst alone when it is absent or null.
func field[T any](f map[string]json.RawMessage, name string, dst *T) error {
	v, ok := f[name]
	if !ok || isNull(v) {
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("%w: field %s: %w", ErrCorruptLog, name, err)
	}
	return nil
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// lineReader reads lines of at most Limits.MaxLineBytes from at most Limits.MaxCommitBytes, so a
// hostile commit costs bounded memory whatever its size.
type lineReader struct {
	br  *bufio.Reader
	lim Limits
	buf []byte
	eof bool
}

func newLineReader(r io.Reader, lim Limits) *lineReader {
	cr := &countingReader{r: r, max: lim.MaxCommitBytes}
	return &lineReader{br: bufio.NewReaderSize(cr, 64<<10), lim: lim}
}

// next returns the next line without its newline; io.EOF after the last one. The last line needs
// no newline (delta-rs writes none).
func (l *lineReader) next() ([]byte, error) {
	if l.eof {
		return nil, io.EOF
	}
	l.buf = l.buf[:0]
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(l.buf)+len(chunk) > l.lim.MaxLineBytes+1 {
			return nil, tooLarge("a line", "MaxLineBytes", int64(l.lim.MaxLineBytes))
		}
		l.buf = append(l.buf, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			l.eof = true
			if len(l.buf) == 0 {
				return nil, io.EOF
			}
		case err != nil:
			return nil, err
		}
		return bytes.TrimSuffix(l.buf, []byte("\n")), nil
	}
}

// countingReader fails once more than max bytes have been read.
type countingReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		return n, tooLarge("the commit", "MaxCommitBytes", c.max)
	}
	return n, err
}
