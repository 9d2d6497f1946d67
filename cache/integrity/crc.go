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

import (
	"encoding/binary"
	"errors"
	"hash"
)

// crcParams describes a reflected CRC whose register starts and ends inverted (CRC-32, CRC-32C,
// CRC-64/NVME all are): enough to combine two CRCs without the data.
type crcParams struct {
	width int    // 32 or 64
	poly  uint64 // reflected polynomial
	x2n   [64]uint64
}

func newCRCParams(width int, poly uint64) *crcParams {
	c := &crcParams{width: width, poly: poly}
	p := uint64(1) << (width - 2) // x^1
	c.x2n[0] = p
	for n := 1; n < 64; n++ {
		p = c.multmodp(p, p)
		c.x2n[n] = p
	}
	return c
}

// multmodp returns a(x)·b(x) mod p(x), polynomials in reflected bit order (zlib's method).
func (c *crcParams) multmodp(a, b uint64) uint64 {
	m := uint64(1) << (c.width - 1)
	var p uint64
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ c.poly
		} else {
			b >>= 1
		}
	}
	return p
}

// x2nmodp returns x^(n·2^k) mod p(x).
func (c *crcParams) x2nmodp(n uint64, k uint) uint64 {
	p := uint64(1) << (c.width - 1) // x^0
	for n != 0 {
		if n&1 != 0 {
			p = c.multmodp(c.x2n[k%64], p)
		}
		n >>= 1
		k++
	}
	return p
}

// combine returns the CRC of A‖B from crc1 = CRC(A), crc2 = CRC(B) and len2 = len(B).
func (c *crcParams) combine(crc1, crc2 uint64, len2 int64) uint64 {
	return c.multmodp(c.x2nmodp(uint64(len2), 3), crc1) ^ crc2
}

var (
	crc32IEEE   = newCRCParams(32, 0xedb88320)
	crc32Castag = newCRCParams(32, 0x82f63b78)
	crc64NVME   = newCRCParams(64, crc64NVMEPoly)
)

// crc64NVMEPoly is CRC-64/NVME's polynomial 0xad93d23594c935a9, bit-reflected; S3 calls it CRC64NVME.
const crc64NVMEPoly = 0x9a6c9329ac4bc9b5

// crc64Tables are slicing-by-8 tables for CRC-64/NVME, built once: the standard library's crc64
// rebuilds them on every Write of 2 KiB or more for a polynomial other than ISO or ECMA.
var crc64Tables = func() *[8][256]uint64 {
	var t [8][256]uint64
	for i := range 256 {
		crc := uint64(i)
		for range 8 {
			if crc&1 == 1 {
				crc = crc>>1 ^ crc64NVMEPoly
			} else {
				crc >>= 1
			}
		}
		t[0][i] = crc
	}
	for i := range 256 {
		crc := t[0][i]
		for j := 1; j < 8; j++ {
			crc = t[0][crc&0xff] ^ crc>>8
			t[j][i] = crc
		}
	}
	return &t
}()

func updateCRC64NVME(crc uint64, p []byte) uint64 {
	crc = ^crc
	if len(p) >= foldMin && haveFold {
		n := len(p) &^ 15
		x0, x1 := foldCRC64(crc, p[:n], &foldConstants)
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], x0)
		binary.LittleEndian.PutUint64(b[8:], x1)
		crc = tableCRC64(0, b[:])
		p = p[n:]
	}
	return ^tableCRC64(crc, p)
}

// foldMin is the length from which folding with carry-less multiplication pays for its set-up.
const foldMin = 128

// foldConstants are x^191, x^127, x^575 and x^511 mod P(x), CRC-64/NVME's polynomial, bit-reflected:
// the multipliers that move 64-bit halves of a 128-bit block forward by 128 and by 512 bits. A
// carry-less product of two reflected values is the polynomial product times x, hence the -1 in each
// exponent (x^(64+128-1), x^(128-1), x^(64+512-1), x^(512-1)).
var foldConstants = [4]uint64{
	crc64NVME.x2nmodp(191, 0), crc64NVME.x2nmodp(127, 0),
	crc64NVME.x2nmodp(575, 0), crc64NVME.x2nmodp(511, 0),
}

// tableCRC64 runs the CRC register crc (not inverted) over p, eight bytes at a time.
func tableCRC64(crc uint64, p []byte) uint64 {
	t := crc64Tables
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint64(p)
		crc = t[7][crc&0xff] ^ t[6][crc>>8&0xff] ^ t[5][crc>>16&0xff] ^ t[4][crc>>24&0xff] ^
			t[3][crc>>32&0xff] ^ t[2][crc>>40&0xff] ^ t[1][crc>>48&0xff] ^ t[0][crc>>56]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}

// crc64nvme is a hash.Hash64 of CRC-64/NVME whose state can be saved and restored (resume).
type crc64nvme struct{ crc uint64 }

// NewCRC64NVME returns a CRC-64/NVME hash, the checksum S3 computes by default.
func NewCRC64NVME() hash.Hash64 { return &crc64nvme{} }

func (d *crc64nvme) Write(p []byte) (int, error) {
	d.crc = updateCRC64NVME(d.crc, p)
	return len(p), nil
}
func (d *crc64nvme) Sum64() uint64       { return d.crc }
func (d *crc64nvme) Sum(b []byte) []byte { return binary.BigEndian.AppendUint64(b, d.crc) }
func (d *crc64nvme) Reset()              { d.crc = 0 }
func (d *crc64nvme) Size() int           { return 8 }
func (d *crc64nvme) BlockSize() int      { return 1 }

const crc64Magic = "crc64nvme\x01"

func (d *crc64nvme) MarshalBinary() ([]byte, error) {
	return binary.BigEndian.AppendUint64([]byte(crc64Magic), d.crc), nil
}

func (d *crc64nvme) UnmarshalBinary(b []byte) error {
	if len(b) != len(crc64Magic)+8 || string(b[:len(crc64Magic)]) != crc64Magic {
		return errors.New("integrity: invalid CRC-64/NVME state")
	}
	d.crc = binary.BigEndian.Uint64(b[len(crc64Magic):])
	return nil
}

// combineSums returns the big-endian CRC of the concatenation of parts whose big-endian CRCs and
// lengths are given.
func combineSums(c *crcParams, sums [][]byte, lens []int64) []byte {
	var acc uint64
	for i, s := range sums {
		v := beUint(s)
		if i == 0 {
			acc = v
		} else {
			acc = c.combine(acc, v, lens[i])
		}
	}
	out := make([]byte, c.width/8)
	for i := range out {
		out[len(out)-1-i] = byte(acc >> (8 * i))
	}
	return out
}

func beUint(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}
