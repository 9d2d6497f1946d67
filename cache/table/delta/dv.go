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
	"fmt"
	"strconv"
	"strings"
)

// deletionVector is a DeletionVectorDescriptor as the log stores it (the fields that locate it).
type deletionVector struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	Offset         *int64 `json:"offset"`
}

// dvRef is what replay keeps of a deletion vector: the unique id that, with the data file's path,
// identifies a logical file, and the key of the file holding it ("" when it is stored inline).
type dvRef struct {
	ID  string
	Key string
}

// resolve derives the unique id and file key of dv, following PROTOCOL.md "Deletion Vectors".
// Storage type "u" names a file relative to the table root, "<prefix>/deletion_vector_<uuid>.bin",
// with the UUID Z85-encoded in the last 20 characters; "i" is inline and needs no file; "p" is an
// absolute path, which like an absolute data path we cannot place inside the table.
func (dv *deletionVector) resolve() (dvRef, error) {
	ref := dvRef{ID: dv.StorageType + dv.PathOrInlineDv}
	if dv.Offset != nil {
		if *dv.Offset < 0 {
			return dvRef{}, fmt.Errorf("%w: deletion vector offset %d", ErrCorruptLog, *dv.Offset)
		}
		ref.ID += "@" + strconv.FormatInt(*dv.Offset, 10)
	}
	switch dv.StorageType {
	case "i":
		return ref, nil
	case "u":
		key, err := dvFileKey(dv.PathOrInlineDv)
		if err != nil {
			return dvRef{}, err
		}
		ref.Key = key
		return ref, nil
	case "p":
		return dvRef{}, fmt.Errorf("%w: deletion vector with absolute path %q", ErrUnsupported, dv.PathOrInlineDv)
	}
	return dvRef{}, fmt.Errorf("%w: deletion vector storageType %q", ErrCorruptLog, dv.StorageType)
}

// dvFileKey turns "<random prefix><20 Z85 characters>" into the deletion vector file's key.
func dvFileKey(s string) (string, error) {
	if len(s) < 20 {
		return "", fmt.Errorf("%w: deletion vector path %q is shorter than a Z85 UUID", ErrCorruptLog, s)
	}
	prefix, encoded := s[:len(s)-20], s[len(s)-20:]
	id, err := z85Decode(encoded)
	if err != nil {
		return "", fmt.Errorf("%w: deletion vector path %q: %w", ErrCorruptLog, s, err)
	}
	name := fmt.Sprintf("deletion_vector_%x-%x-%x-%x-%x.bin", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
	if prefix == "" {
		return name, nil
	}
	key := prefix + "/" + name
	if err := checkRelativeKey(key); err != nil || strings.Contains(prefix, "/") {
		return "", fmt.Errorf("%w: deletion vector prefix %q is not a plain folder name", ErrCorruptLog, prefix)
	}
	return key, nil
}

const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85Decode decodes Z85 (ZeroMQ RFC 32): every 5 characters are a big-endian base-85 uint32.
func z85Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85 length %d is not a multiple of 5", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := 0; j < 5; j++ {
			d := strings.IndexByte(z85Alphabet, s[i+j])
			if d < 0 {
				return nil, fmt.Errorf("z85 character %q", s[i+j])
			}
			v = v*85 + uint64(d)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("z85 group %q overflows", s[i:i+5])
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}
