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

package s3creds

import (
	"errors"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"
)

// awsKeyID is the form of an access key ID that SDKs which check it accept.
var awsKeyID = regexp.MustCompile(`^[A-Z0-9]{16,128}$`)

// TestAccessKeyIDs: the longest namespace fits the form AWS SDKs accept, reads back, and every
// change to an ID makes it not ours or another key.
func TestAccessKeyIDs(t *testing.T) {
	for _, k := range []AccessKey{
		{Namespace: "a", KeyGen: 0, Epoch: 0},
		{Namespace: "team-a", KeyGen: 1, Epoch: 20429},
		{Namespace: strings.Repeat("n", 63), KeyGen: 255, Epoch: 1<<32 - 1},
	} {
		id := k.ID()
		if !awsKeyID.MatchString(id) || len(id) > 117 {
			t.Errorf("%+v: ID %q (%d characters) is not of the form AWS SDKs accept", k, id, len(id))
		}
		got, err := ParseAccessKeyID(id)
		if err != nil || got != k {
			t.Errorf("%q read back as %+v, %v; want %+v", id, got, err, k)
		}
	}
	for _, id := range []string{"", "AKIAIOSFODNN7EXAMPLE", "PQCACHE1", "PQCACHE1AAAAAAAA", "PQCACHE2" + (AccessKey{Namespace: "a"}).ID()[8:],
		(AccessKey{Namespace: "Not-A-Label"}).ID(), (AccessKey{Namespace: "a"}).ID() + "=", strings.ToLower((AccessKey{Namespace: "a"}).ID())} {
		if _, err := ParseAccessKeyID(id); !errors.Is(err, ErrNotOurs) {
			t.Errorf("%q: %v, want ErrNotOurs", id, err)
		}
	}
}

// TestSecretsAreBoundToEveryField: another namespace, epoch, key generation or master key gives
// another secret, of an AWS secret's length.
func TestSecretsAreBoundToEveryField(t *testing.T) {
	master := []byte(strings.Repeat("k", MinMasterKey))
	base := AccessKey{Namespace: "team-a", KeyGen: 1, Epoch: 100}
	seen := map[string]string{}
	for name, k := range map[string]AccessKey{
		"base":      base,
		"namespace": {Namespace: "team-b", KeyGen: 1, Epoch: 100},
		"keygen":    {Namespace: "team-a", KeyGen: 2, Epoch: 100},
		"epoch":     {Namespace: "team-a", KeyGen: 1, Epoch: 101},
	} {
		s := Secret(master, k.ID())
		if len(s) != 40 {
			t.Errorf("%s: secret of %d characters", name, len(s))
		}
		if other, dup := seen[s]; dup {
			t.Errorf("%s and %s have the same secret", name, other)
		}
		seen[s] = name
	}
	if Secret([]byte(strings.Repeat("j", MinMasterKey)), base.ID()) == Secret(master, base.ID()) {
		t.Error("two master keys give the same secret")
	}
}

// TestEpochs: a key is accepted from Skew before its epoch to the end of the next one, and the
// refusal says when it expired.
func TestEpochs(t *testing.T) {
	e := Epochs{Length: time.Hour, Skew: 5 * time.Minute}
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	n := e.At(start)
	if !e.Start(n).Equal(start) || e.At(start.Add(-time.Nanosecond)) != n-1 {
		t.Fatalf("epoch %d starts at %s", n, e.Start(n))
	}
	for at, ok := range map[time.Time]bool{
		start.Add(-6 * time.Minute):              false,
		start.Add(-4 * time.Minute):              true,
		start:                                    true,
		start.Add(119 * time.Minute):             true,
		start.Add(2 * time.Hour):                 false,
		start.Add(2*time.Hour - time.Nanosecond): true,
	} {
		err := e.Check(n, at)
		if (err == nil) != ok {
			t.Errorf("epoch %d at %s: %v, want accepted=%v", n, at.Format(time.RFC3339Nano), err, ok)
		}
	}
	if err := e.Check(n, start.Add(3*time.Hour)); err == nil || !strings.Contains(err.Error(), "expired at 2026-12-07T12:00:00Z") {
		t.Errorf("an expired key: %v", err)
	}
}

// FuzzAccessKeyID: whatever ID a request carries, parsing never panics, and an ID that parses is
// the one its fields write, for a namespace that is a DNS label.
func FuzzAccessKeyID(f *testing.F) {
	f.Add((AccessKey{Namespace: "team-a", KeyGen: 1, Epoch: 20429}).ID())
	f.Add("AKIAIOSFODNN7EXAMPLE")
	f.Add("PQCACHE1AEAAAAAA")
	f.Add("PQCACHE1" + strings.Repeat("A", 200))
	f.Fuzz(func(t *testing.T, id string) {
		k, err := ParseAccessKeyID(id)
		if err != nil {
			return
		}
		if k.ID() != id || len(k.Namespace) == 0 || len(k.Namespace) > 63 {
			t.Fatalf("%q parsed as %+v, which writes %q", id, k, k.ID())
		}
	})
}

// FuzzPinToken: whatever session token a request carries, parsing never panics, and a token that
// parses writes a token that parses to the same pin.
func FuzzPinToken(f *testing.F) {
	f.Add("pqcache-pin/v1;s=job-1;g=sales:3,tpch:12")
	f.Add("pqcache-pin/v1")
	f.Add("pqcache-pin/v1;g=a:1;s=x")
	f.Add("FwoGZXIvYXdzEJr//////////wEaDH")
	f.Add("pqcache-pin/v1;s=a;s=b")
	f.Add("pqcache-pin/v1;g=a:01")
	f.Fuzz(func(t *testing.T, token string) {
		p, err := ParsePin(token)
		if err != nil {
			return
		}
		again, err := ParsePin(p.String())
		if err != nil || again.Session != p.Session || !maps.Equal(again.Generations, p.Generations) {
			t.Fatalf("%q parsed as %+v, written as %q, read again as %+v, %v", token, p, p.String(), again, err)
		}
	})
}

// TestPinTokens: the forms a reader sends, and the mistakes it gets told about.
func TestPinTokens(t *testing.T) {
	p, err := ParsePin("pqcache-pin/v1;s=bench-7;g=sales:3,tpch:12")
	if err != nil || p.Session != "bench-7" || !maps.Equal(p.Generations, map[string]int64{"sales": 3, "tpch": 12}) {
		t.Fatalf("%+v, %v", p, err)
	}
	for _, bad := range []string{"FwoGZXIvYXdzEJr", "pqcache-pin/v1;s=", "pqcache-pin/v1;g=sales:0", "pqcache-pin/v1;g=Sales:1",
		"pqcache-pin/v1;g=a:1,a:2", "pqcache-pin/v1;x=1", "pqcache-pin/v1;s=" + strings.Repeat("a", 65)} {
		if _, err := ParsePin(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
