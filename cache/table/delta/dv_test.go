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
	"errors"
	"path/filepath"
	"testing"
)

func filepathGlob(dir string) ([]string, error) { return filepath.Glob(filepath.Join(dir, "*")) }

func TestDeletionVectorResolve(t *testing.T) {
	cases := []struct {
		dv      deletionVector
		wantKey string
		wantID  string
		wantErr error
	}{
		{deletionVector{StorageType: "u", PathOrInlineDv: specDV, Offset: ptr(int64(4))}, specDVKey, "u" + specDV + "@4", nil},
		{deletionVector{StorageType: "u", PathOrInlineDv: specDV[2:]}, "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin", "u" + specDV[2:], nil},
		{deletionVector{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"}, "", "iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", nil},
		{deletionVector{StorageType: "u", PathOrInlineDv: "../" + specDV[2:]}, "", "", ErrCorruptLog},
		{deletionVector{StorageType: "u", PathOrInlineDv: "a/b" + specDV[2:]}, "", "", ErrCorruptLog},
		{deletionVector{StorageType: "u", PathOrInlineDv: "short"}, "", "", ErrCorruptLog},
		{deletionVector{StorageType: "u", PathOrInlineDv: "ab" + "~~~~~~~~~~~~~~~~~~~~"}, "", "", ErrCorruptLog},
		{deletionVector{StorageType: "u", PathOrInlineDv: "#####" + specDV[7:]}, "", "", ErrCorruptLog}, // overflows uint32
		{deletionVector{StorageType: "u", PathOrInlineDv: specDV, Offset: ptr(int64(-1))}, "", "", ErrCorruptLog},
		{deletionVector{StorageType: "p", PathOrInlineDv: "s3://t/dv.bin"}, "", "", ErrUnsupported},
	}
	for _, tc := range cases {
		ref, err := tc.dv.resolve()
		if !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
			t.Errorf("%+v: err = %v, want %v", tc.dv, err, tc.wantErr)
			continue
		}
		if ref.Key != tc.wantKey || ref.ID != tc.wantID {
			t.Errorf("%+v: got %+v, want key %q id %q", tc.dv, ref, tc.wantKey, tc.wantID)
		}
	}
}
