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

// Package s3creds derives the credentials with which pods read their namespace's Datasets through
// the node agents' S3 endpoint for readers, and reads them back on the agent's side, with no
// per-namespace Secret to read there: an access key ID names its namespace, its key generation and
// its epoch, and its secret is an HMAC of the ID under one master key that the manager writes and
// the agents read. The manager hands each namespace its current key in a Secret; an agent checks a
// request's key by deriving its secret again. It also reads the session token with which a reader
// pins the generations it reads.
//
// It imports no Kubernetes client: the manager and the agent each read the master key their way.
package s3creds

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// SecretName is the Secret in each namespace that holds its current key (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY), and ConfigMapName the ConfigMap with the endpoint and its CA (ca.crt,
// endpoint, region).
const (
	SecretName    = "pqcache-s3-credentials"
	ConfigMapName = "pqcache-s3"
)

// idPrefix begins every access key ID this package issues (version 1 of the format); it also makes
// the shortest ID as long as the 16 characters SDKs require.
const idPrefix = "PQCACHE1"

// idEncoding writes IDs in the alphabet of AWS access key IDs (upper-case letters and digits), which
// SDKs that check an ID's form accept.
var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// AccessKey is what an access key ID says: the namespace whose Datasets it reads, the master key
// generation its secret is derived from, and the epoch it was issued for.
type AccessKey struct {
	Namespace string
	KeyGen    byte
	Epoch     uint32
}

// ID is the access key ID: "PQCACHE1" and the base32 of keygen, epoch (big-endian) and namespace:
// 18 to 117 characters, within the 16 to 128 of IAM's access key IDs.
func (k AccessKey) ID() string {
	b := make([]byte, 0, 5+len(k.Namespace))
	b = append(b, k.KeyGen)
	b = binary.BigEndian.AppendUint32(b, k.Epoch)
	b = append(b, k.Namespace...)
	return idPrefix + idEncoding.EncodeToString(b)
}

// ErrNotOurs says an access key ID was not issued by pqcache (another store's key, a typo).
var ErrNotOurs = errors.New("not an access key that pqcache issued")

// ParseAccessKeyID reads an ID that AccessKey.ID wrote; anything else is ErrNotOurs.
func ParseAccessKeyID(id string) (AccessKey, error) {
	rest, ok := strings.CutPrefix(id, idPrefix)
	if !ok || len(rest) > 109 {
		return AccessKey{}, ErrNotOurs
	}
	b, err := idEncoding.DecodeString(rest)
	if err != nil || len(b) < 6 {
		return AccessKey{}, ErrNotOurs
	}
	k := AccessKey{KeyGen: b[0], Epoch: binary.BigEndian.Uint32(b[1:5]), Namespace: string(b[5:])}
	if errs := validation.IsDNS1123Label(k.Namespace); len(errs) > 0 || k.ID() != id {
		return AccessKey{}, ErrNotOurs
	}
	return k, nil
}

// secretContext separates these secrets from any other use of the master key.
const secretContext = "pqcache-s3/v1\x00"

// Secret is the secret access key of id under master: HMAC-SHA256(master, context | id), 40
// characters of URL-safe base64, the length of an AWS secret key.
func Secret(master []byte, id string) string {
	m := hmac.New(sha256.New, master)
	m.Write([]byte(secretContext + id)) // a hash never fails a write
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))[:40]
}

// MasterDataKey is the master key Secret's data key of key generation gen.
func MasterDataKey(gen byte) string { return "keygen-" + strconv.Itoa(int(gen)) }

// MinMasterKey is the shortest master key Secret is given: 256 bits.
const MinMasterKey = 32

// Epochs cut time into the periods for which keys are issued. A key is accepted in its own epoch
// and the next (so one handed out just before a boundary lives at least Length), and from Skew
// before its epoch starts (a manager's clock ahead of an agent's).
type Epochs struct {
	Length time.Duration
	Skew   time.Duration
}

// DefaultEpochs are the epochs the manager and the agents use unless told: keys live 24 to 48 hours.
var DefaultEpochs = Epochs{Length: 24 * time.Hour, Skew: 5 * time.Minute}

// At is the epoch t falls in.
func (e Epochs) At(t time.Time) uint32 {
	return uint32(t.Unix() / int64(e.Length/time.Second))
}

// Start is when epoch n begins.
func (e Epochs) Start(n uint32) time.Time {
	return time.Unix(int64(n)*int64(e.Length/time.Second), 0).UTC()
}

// Expires is when a key of epoch n stops being accepted: the end of the epoch after it.
func (e Epochs) Expires(n uint32) time.Time { return e.Start(n + 2) }

// Check says whether a key of epoch n is accepted at now, and if not, why.
func (e Epochs) Check(n uint32, now time.Time) error {
	if now.Before(e.Start(n).Add(-e.Skew)) {
		return fmt.Errorf("the access key is for epoch %d, which starts at %s", n, e.Start(n).Format(time.RFC3339))
	}
	if !now.Before(e.Expires(n)) {
		return fmt.Errorf("the access key of epoch %d expired at %s", n, e.Expires(n).Format(time.RFC3339))
	}
	return nil
}
