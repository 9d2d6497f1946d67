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
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
)

// checkpointRow names the checkpoint columns a snapshot needs; parquet-go reads only these.
// Every field is optional so that checkpoints written with nullable columns (Spark) and with
// required ones (delta-rs) both convert. Removes are not read: in a checkpoint they are only
// tombstones for VACUUM and cannot cancel an add of the same checkpoint.
type checkpointRow struct {
	Add      *checkpointAdd      `parquet:"add,optional"`
	MetaData *checkpointMetaData `parquet:"metaData,optional"`
	Protocol *checkpointProtocol `parquet:"protocol,optional"`
	Sidecar  *checkpointSidecar  `parquet:"sidecar,optional"`
}

type checkpointAdd struct {
	Path           *string       `parquet:"path,optional"`
	Size           *int64        `parquet:"size,optional"`
	DeletionVector *checkpointDV `parquet:"deletionVector,optional"`
}

type checkpointDV struct {
	StorageType    *string `parquet:"storageType,optional"`
	PathOrInlineDv *string `parquet:"pathOrInlineDv,optional"`
	Offset         *int32  `parquet:"offset,optional"`
}

type checkpointMetaData struct {
	ID               *string  `parquet:"id,optional"`
	PartitionColumns []string `parquet:"partitionColumns,optional,list"`
}

type checkpointProtocol struct {
	MinReaderVersion *int32   `parquet:"minReaderVersion,optional"`
	MinWriterVersion *int32   `parquet:"minWriterVersion,optional"`
	ReaderFeatures   []string `parquet:"readerFeatures,optional,list"`
	WriterFeatures   []string `parquet:"writerFeatures,optional,list"`
}

type checkpointSidecar struct {
	Path *string `parquet:"path,optional"`
}

// readCheckpointPart fetches one checkpoint part into a temporary file (parquet needs random
// access; the bytes never sit in memory) and hands its add, protocol and metaData rows to fn.
func readCheckpointPart(ctx context.Context, obj LogObject, fetch Fetch, lim Limits, fn func(action) error) error {
	if obj.Size > lim.MaxCheckpointBytes {
		return tooLarge(obj.Key, "MaxCheckpointBytes", lim.MaxCheckpointBytes)
	}
	tmp, size, err := spool(ctx, obj.Key, fetch, lim)
	if err != nil {
		return err
	}
	defer func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
	}()
	if err := scanCheckpoint(ctx, tmp, size, lim, fn); err != nil {
		return fmt.Errorf("%s: %w", obj.Key, err)
	}
	return nil
}

// spool copies a fetched object into a temporary file, at most Limits.MaxCheckpointBytes of it.
func spool(ctx context.Context, key string, fetch Fetch, lim Limits) (*os.File, int64, error) {
	rc, err := fetch(ctx, key)
	if err != nil {
		return nil, 0, fmt.Errorf("fetching %s: %w", key, err)
	}
	defer func() { _ = rc.Close() }()
	tmp, err := os.CreateTemp(lim.TempDir, "delta-checkpoint-*.parquet")
	if err != nil {
		return nil, 0, fmt.Errorf("spooling %s: %w", key, err)
	}
	n, err := io.Copy(tmp, io.LimitReader(ctxReader{ctx, rc}, lim.MaxCheckpointBytes+1))
	if err == nil && n > lim.MaxCheckpointBytes {
		err = tooLarge(key, "MaxCheckpointBytes", lim.MaxCheckpointBytes)
	} else if err != nil {
		err = fmt.Errorf("fetching %s: %w", key, err)
	}
	if err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return nil, 0, err
	}
	return tmp, n, nil
}

// scanCheckpoint reads the rows of one Parquet checkpoint. parquet-go panics on some malformed
// input; a panic here means the file does not parse, never a crash of the sync.
func scanCheckpoint(ctx context.Context, r io.ReaderAt, size int64, lim Limits, fn func(action) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: checkpoint does not parse: %v", ErrCorruptLog, p)
		}
	}()
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("%w: checkpoint does not parse: %w", ErrCorruptLog, err)
	}
	if f.NumRows() > lim.MaxActions {
		return tooLarge(fmt.Sprintf("%d checkpoint rows", f.NumRows()), "MaxActions", lim.MaxActions)
	}
	reader := parquet.NewGenericReader[checkpointRow](f)
	defer func() { _ = reader.Close() }()
	rows := make([]checkpointRow, 256)
	for row := int64(1); ; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, readErr := reader.Read(rows)
		for i := range rows[:n] {
			if err := checkpointActions(&rows[i], fn); err != nil {
				return fmt.Errorf("row %d: %w", row, err)
			}
			rows[i] = checkpointRow{}
			row++
		}
		if errors.Is(readErr, io.EOF) {
			return nil
		}
		if readErr != nil {
			return fmt.Errorf("%w: checkpoint does not parse: %w", ErrCorruptLog, readErr)
		}
	}
}

// checkpointActions validates one row's actions as the JSON path does and passes them to fn.
func checkpointActions(r *checkpointRow, fn func(action) error) error {
	if r.Sidecar != nil {
		return fmt.Errorf("%w: v2 checkpoint with sidecar files", ErrUnsupported)
	}
	var acts []action
	if a := r.Add; a != nil {
		act, err := newFileAction(actAdd, a.Path, a.Size, a.DeletionVector.descriptor())
		if err != nil {
			return fmt.Errorf("add: %w", err)
		}
		acts = append(acts, act)
	}
	if p := r.Protocol; p != nil {
		act, err := newProtocol(widen(p.MinReaderVersion), widen(p.MinWriterVersion), p.ReaderFeatures, p.WriterFeatures)
		if err != nil {
			return err
		}
		acts = append(acts, act)
	}
	if m := r.MetaData; m != nil {
		act, err := newMetaData(m.ID, m.PartitionColumns)
		if err != nil {
			return err
		}
		acts = append(acts, act)
	}
	if len(acts) > 1 {
		return fmt.Errorf("%w: one row holds several actions", ErrCorruptLog)
	}
	for _, a := range acts {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// descriptor converts a checkpoint's deletion vector to the JSON form; nil stays nil.
func (dv *checkpointDV) descriptor() *deletionVector {
	if dv == nil {
		return nil
	}
	d := &deletionVector{Offset: widen(dv.Offset)}
	if dv.StorageType != nil {
		d.StorageType = *dv.StorageType
	}
	if dv.PathOrInlineDv != nil {
		d.PathOrInlineDv = *dv.PathOrInlineDv
	}
	return d
}

func widen(p *int32) *int64 {
	if p == nil {
		return nil
	}
	v := int64(*p)
	return &v
}

// ctxReader stops a long copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
