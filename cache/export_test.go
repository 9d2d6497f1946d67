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

package cache

// BuffersPeak returns the most copy buffers out at once since ResetBuffersPeak, for tests.
func BuffersPeak() int64 { return buffers.peak.Load() }

// ResetBuffersPeak starts a new peak from the buffers out now.
func ResetBuffersPeak() { buffers.peak.Store(buffers.out.Load()) }

// Flushes returns how many times a sync has flushed a filesystem (syncfs) in this process.
func Flushes() int64 { return flushes.Load() }

// WrittenBack returns how many bytes syncs in this process handed to the kernel's writeback as they
// arrived (sync_file_range).
func WrittenBack() int64 { return writtenBack.Load() }

// WrittenDirect returns how many bytes syncs in this process wrote with direct I/O.
func WrittenDirect() int64 { return writtenDirect.Load() }

// SetPublishHook makes every batch that the sync publishes call fn first, in the publishing
// goroutine; the returned function takes it away.
func SetPublishHook(fn func()) (restore func()) {
	publishHook = fn
	return func() { publishHook = nil }
}
