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

package s3store

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// A body that trickles fails under the floor; one whose reader is busy elsewhere does not, nor one
// that delivers.
func TestBodyFloor(t *testing.T) {
	floor := BodyFloor{Window: 200 * time.Millisecond, Bytes: 1 << 10}

	r, w := io.Pipe()
	go func() {
		for range 20 {
			if _, err := w.Write([]byte{'x'}); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		w.Close()
	}()
	_, err := io.ReadAll(floored(r, floor))
	if !errors.Is(err, ErrSourceTooSlow) {
		t.Errorf("a trickle of 20 B/s under a floor of 5 KiB/s: %v, want ErrSourceTooSlow", err)
	}

	busy := floored(io.NopCloser(bytes.NewReader(make([]byte, 4<<10))), floor)
	time.Sleep(3 * floor.Window) // the reader is elsewhere: the store is not to blame
	if n, err := io.Copy(io.Discard, busy); err != nil || n != 4<<10 {
		t.Errorf("a body read late: %d bytes, %v", n, err)
	}
	busy.Close()

	off := floored(io.NopCloser(bytes.NewReader([]byte("x"))), BodyFloor{Window: -1})
	if _, ok := off.(*floorBody); ok {
		t.Error("a negative window still holds bodies to a floor")
	}
}
