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

package integrity

import "golang.org/x/sys/cpu"

// haveFold is true when the CPU multiplies without carries (PCLMULQDQ): CRC-64/NVME then runs at
// several GB/s instead of the table method's ~1.5 GB/s, which matters because every downloaded byte
// is checked against the store's CRC64NVME.
var haveFold = cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE41

// foldCRC64 folds p (a multiple of 16 bytes, at least 16) into one 128-bit value congruent to the
// CRC register crc followed by p, modulo the polynomial, for tableCRC64 to finish (crc_amd64.s).
//
//go:noescape
func foldCRC64(crc uint64, p []byte, k *[4]uint64) (x0, x1 uint64)
