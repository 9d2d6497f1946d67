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

import "fmt"

// actionKind says which of the actions a snapshot needs one log row holds. The others (commitInfo,
// txn, cdc, domainMetadata, ...) do not change which files a reader opens and are skipped.
type actionKind int

const (
	actNone actionKind = iota
	actAdd
	actRemove
	actProtocol
	actMetaData
)

// action is one validated log row, from a JSON commit or a checkpoint.
type action struct {
	Kind     actionKind
	File     fileAction // actAdd, actRemove
	Protocol Protocol   // actProtocol
	Meta     metaData   // actMetaData
}

// fileAction is an add or remove: the logical file (path, deletion vector id) and, for an add,
// its size and deletion vector file.
type fileAction struct {
	Key  string
	Size int64
	DV   dvRef
}

// metaData is what we keep of the metaData action.
type metaData struct {
	ID               string
	PartitionColumns []string
}

// Protocol is the table's protocol action: what a reader and a writer must implement.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

// newFileAction validates an add (size set) or remove (size nil) from either log format.
func newFileAction(kind actionKind, path *string, size *int64, dv *deletionVector) (action, error) {
	if path == nil {
		return action{}, fmt.Errorf("%w: missing path", ErrCorruptLog)
	}
	key, err := dataKey(*path)
	if err != nil {
		return action{}, err
	}
	a := action{Kind: kind, File: fileAction{Key: key}}
	if kind == actAdd {
		if size == nil || *size < 0 {
			return action{}, fmt.Errorf("%w: add %q: missing or negative size", ErrCorruptLog, key)
		}
		a.File.Size = *size
	}
	if dv != nil {
		if a.File.DV, err = dv.resolve(); err != nil {
			return action{}, err
		}
	}
	return a, nil
}

// newProtocol validates a protocol action's required versions.
func newProtocol(minReader, minWriter *int64, readerFeatures, writerFeatures []string) (action, error) {
	if minReader == nil || minWriter == nil || *minReader < 1 || *minWriter < 1 {
		return action{}, fmt.Errorf("%w: protocol without minReaderVersion and minWriterVersion", ErrCorruptLog)
	}
	return action{Kind: actProtocol, Protocol: Protocol{
		MinReaderVersion: int(min(*minReader, 1<<30)),
		MinWriterVersion: int(min(*minWriter, 1<<30)),
		ReaderFeatures:   readerFeatures,
		WriterFeatures:   writerFeatures,
	}}, nil
}

// newMetaData validates a metaData action: it must name the table's id.
func newMetaData(id *string, partitionColumns []string) (action, error) {
	if id == nil {
		return action{}, fmt.Errorf("%w: metaData without id", ErrCorruptLog)
	}
	return action{Kind: actMetaData, Meta: metaData{ID: *id, PartitionColumns: partitionColumns}}, nil
}
