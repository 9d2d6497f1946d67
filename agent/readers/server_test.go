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

package readers

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/internal/s3creds"
)

var master = []byte("0123456789abcdef0123456789abcdef")

// publish writes files as the next generation g of root, keeping keep generations.
func publish(t testing.TB, root string, g int64, files map[string]string, keep int) {
	t.Helper()
	publishFrom(t, root, g, files, keep, "")
}

// publishFrom is publish, recording source as the generation's.
func publishFrom(t testing.TB, root string, g int64, files map[string]string, keep int, source string) {
	t.Helper()
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		p := filepath.Join(root, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(p) // the older generation's link: write a new file, not through it
		if err := os.WriteFile(p, []byte(files[k]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	entries := func(fn func(manifest.Entry) error) error {
		for _, k := range keys {
			if err := fn(manifest.Entry{Key: k, Size: int64(len(files[k])), LastModified: at, ETag: `"` + k + `"`}); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := generations.Publish(context.Background(), root, g, entries, generations.Policy{Keep: keep, Index: true, Source: source}, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// fixture is an endpoint serving two namespaces: team-a reads Datasets "sales" (s3://lake/sales/)
// and "all" (s3://lake/, its own copy), team-b reads "secret" (s3://lake/secret/).
type fixture struct {
	srv      *Server
	url      string
	sales    string // the root of team-a's "sales" copy
	sessions *Sessions
	// salesSource is the "sales" Dataset's source as the catalog says it now; its first generation
	// was copied from salesFrom.
	salesSource string
}

const salesFrom = "s3://lake/sales/ at http://store"

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{sales: filepath.Join(dir, "sales"), sessions: &Sessions{}, salesSource: salesFrom}
	all, secret := filepath.Join(dir, "all"), filepath.Join(dir, "secret")
	publishFrom(t, f.sales, 1, map[string]string{"day=1/a.parquet": "sales one a", "day=1/b.parquet": "sales one b", "day=2/a.parquet": "sales two a"}, 2, salesFrom)
	publish(t, all, 1, map[string]string{"readme.txt": "the lake", "sales/day=1/a.parquet": "shadowed", "sales0.txt": "beside"}, 1)
	publish(t, secret, 1, map[string]string{"keys.txt": "team-b only"}, 1)
	catalog := CatalogFunc(func(_ context.Context, ns string) []Served {
		switch ns {
		case "team-a":
			return []Served{{Dataset: "sales", Bucket: "lake", Prefix: "sales/", Root: f.sales, Source: f.salesSource}, {Dataset: "all", Bucket: "lake", Root: all}}
		case "team-b":
			return []Served{{Dataset: "secret", Bucket: "lake", Prefix: "secret/", Root: secret, Region: "eu-west-1"}}
		}
		return nil
	})
	f.srv = &Server{Catalog: catalog, Sessions: f.sessions, MasterKey: func(gen byte) ([]byte, error) {
		if gen != 1 {
			return nil, errors.New("no such key generation")
		}
		return master, nil
	}}
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	f.url = ts.URL
	return f
}

// client is an S3 client of namespace ns, with the session token, as a reader configures one.
func (f *fixture) client(ns, token string) *s3.Client {
	id := s3creds.AccessKey{Namespace: ns, KeyGen: 1, Epoch: s3creds.DefaultEpochs.At(time.Now())}.ID()
	return f.clientWith(id, s3creds.Secret(master, id), token)
}

func (f *fixture) clientWith(id, secret, token string) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(f.url), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(id, secret, token),
		// One attempt: a test sees each answer, not the last of the SDK's retries of a SlowDown.
		RetryMaxAttempts: 1,
	})
}

func get(t *testing.T, c *s3.Client, key string, rng string) (string, error) {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: aws.String("lake"), Key: aws.String(key)}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	out, err := c.GetObject(t.Context(), in)
	if err != nil {
		return "", err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return string(b), err
}

func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// TestAReaderKeepsItsURLs: an S3 SDK pointed at the endpoint reads a namespace's Datasets under
// their buckets' own keys, by range and from the end, lists them with and without a delimiter, and
// is told NoSuchKey for what no Dataset holds.
func TestAReaderKeepsItsURLs(t *testing.T) {
	f := newFixture(t)
	c := f.client("team-a", "")
	for key, want := range map[string]string{
		"sales/day=1/a.parquet": "sales one a", // the longer prefix's Dataset, not "all"
		"sales/day=2/a.parquet": "sales two a",
		"readme.txt":            "the lake",
		"sales0.txt":            "beside",
	} {
		if got, err := get(t, c, key, ""); err != nil || got != want {
			t.Errorf("GET %s: %q, %v; want %q", key, got, err, want)
		}
	}
	if got, err := get(t, c, "sales/day=1/a.parquet", "bytes=6-8"); err != nil || got != "one" {
		t.Errorf("a range: %q, %v", got, err)
	}
	if got, err := get(t, c, "sales/day=1/a.parquet", "bytes=-1"); err != nil || got != "a" {
		t.Errorf("a suffix range: %q, %v", got, err)
	}
	for _, key := range []string{"sales/day=3/a.parquet", "secret/keys.txt", "nothing"} {
		if _, err := get(t, c, key, ""); errorCode(err) != "NoSuchKey" {
			t.Errorf("GET %s: %v, want NoSuchKey", key, err)
		}
	}
	out, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("lake"), Prefix: aws.String("sales/"), Delimiter: aws.String("/")})
	if err != nil {
		t.Fatal(err)
	}
	var prefixes []string
	for _, p := range out.CommonPrefixes {
		prefixes = append(prefixes, aws.ToString(p.Prefix))
	}
	if !slices.Equal(prefixes, []string{"sales/day=1/", "sales/day=2/"}) || len(out.Contents) != 0 {
		t.Errorf("listing with a delimiter: prefixes %q, %d objects", prefixes, len(out.Contents))
	}
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String("lake"), MaxKeys: aws.Int32(2)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	want := []string{"readme.txt", "sales/day=1/a.parquet", "sales/day=1/b.parquet", "sales/day=2/a.parquet", "sales0.txt"}
	if !slices.Equal(keys, want) {
		t.Errorf("paged listing: %q, want %q", keys, want)
	}
	if _, err := c.HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: aws.String("lake")}); err != nil {
		t.Errorf("HeadBucket: %v", err)
	}
}

// TestANamespaceReadsOnlyItsOwn: another namespace's key is refused on a bucket it reads no
// Dataset of, and sees only its own Datasets where it does; forged, expired, foreign and unsigned
// keys are refused with S3's codes, and the messages say why.
func TestANamespaceReadsOnlyItsOwn(t *testing.T) {
	f := newFixture(t)
	b := f.client("team-b", "")
	if _, err := get(t, b, "sales/day=1/a.parquet", ""); errorCode(err) != "NoSuchKey" {
		t.Errorf("team-b reading team-a's key: %v, want NoSuchKey from its own Datasets", err)
	}
	if got, err := get(t, b, "secret/keys.txt", ""); err != nil || got != "team-b only" {
		t.Errorf("team-b reading its own: %q, %v", got, err)
	}
	out, err := b.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("lake")})
	if err != nil || len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "secret/keys.txt" {
		t.Errorf("team-b's listing: %+v, %v", out, err)
	}
	if _, err := get(t, f.client("team-c", ""), "readme.txt", ""); errorCode(err) != "AccessDenied" || !strings.Contains(err.Error(), "namespace team-c has no Dataset of bucket lake") {
		t.Errorf("a namespace with no Dataset: %v", err)
	}
	idA := s3creds.AccessKey{Namespace: "team-a", KeyGen: 1, Epoch: s3creds.DefaultEpochs.At(time.Now())}.ID()
	idB := s3creds.AccessKey{Namespace: "team-b", KeyGen: 1, Epoch: s3creds.DefaultEpochs.At(time.Now())}.ID()
	gen2 := s3creds.AccessKey{Namespace: "team-a", KeyGen: 2, Epoch: s3creds.DefaultEpochs.At(time.Now())}.ID()
	old := s3creds.AccessKey{Namespace: "team-a", KeyGen: 1, Epoch: s3creds.DefaultEpochs.At(time.Now()) - 2}.ID()
	for name, tc := range map[string]struct {
		c          *s3.Client
		code, says string
	}{
		"team-a's ID with team-b's secret": {f.clientWith(idA, s3creds.Secret(master, idB), ""), "SignatureDoesNotMatch", "signature"},
		"an expired key":                   {f.clientWith(old, s3creds.Secret(master, old), ""), "AccessDenied", "expired at"},
		"an AWS key":                       {f.clientWith("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""), "InvalidAccessKeyId", "not issued by pqcache"},
		"an unknown key generation":        {f.clientWith(gen2, s3creds.Secret(master, gen2), ""), "InvalidAccessKeyId", "keys of generation 2"},
		"a real AWS session token":         {f.client("team-a", "FwoGZXIvYXdzEJr//////////wEaDH"), "AccessDenied", "not a pqcache pin"},
	} {
		_, err := get(t, tc.c, "readme.txt", "")
		if errorCode(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %s saying %q", name, err, tc.code, tc.says)
		}
	}
}

// TestAPodOfAnotherNodeIsRefused: the client check runs before anything else, and says why.
func TestAPodOfAnotherNodeIsRefused(t *testing.T) {
	f := newFixture(t)
	f.srv.ClientCheck = func(a netip.Addr) error {
		return errors.New(a.String() + " is not a pod of this node: read through the Service pqcache-s3, whose traffic stays on the node")
	}
	if _, err := get(t, f.client("team-a", ""), "readme.txt", ""); errorCode(err) != "AccessDenied" || !strings.Contains(err.Error(), "127.0.0.1 is not a pod of this node") {
		t.Errorf("a client the check refuses: %v", err)
	}
}

// TestASessionReadsOneGeneration: a session keeps the generation it began with through a refresh;
// a new session, and the same one after its idle time, read the new one; a pin reads the generation
// it names while it is kept, and NoSuchKey after; the generation a session held is collected once
// the session ends.
func TestASessionReadsOneGeneration(t *testing.T) {
	f := newFixture(t)
	clock := time.Now()
	f.sessions.Now = func() time.Time { return clock }
	job := f.client("team-a", "pqcache-pin/v1;s=job-1")
	if got, _ := get(t, job, "sales/day=1/a.parquet", ""); got != "sales one a" {
		t.Fatalf("before the refresh: %q", got)
	}
	publish(t, f.sales, 2, map[string]string{"day=1/a.parquet": "sales TWO a", "day=3/a.parquet": "new"}, 1)
	if got, _ := get(t, job, "sales/day=1/a.parquet", ""); got != "sales one a" {
		t.Errorf("the session after a refresh: %q, want generation 1's", got)
	}
	if _, err := get(t, job, "sales/day=3/a.parquet", ""); errorCode(err) != "NoSuchKey" {
		t.Errorf("the session reading a key of the next generation: %v, want NoSuchKey", err)
	}
	if got, _ := get(t, f.client("team-a", "pqcache-pin/v1;s=job-2"), "sales/day=1/a.parquet", ""); got != "sales TWO a" {
		t.Errorf("a new session: %q, want generation 2's", got)
	}
	if got, _ := get(t, f.client("team-a", "pqcache-pin/v1;s=job-3;g=sales:1"), "sales/day=2/a.parquet", ""); got != "sales two a" {
		t.Errorf("a pin of generation 1: %q", got)
	}
	clock = clock.Add(DefaultIdle)
	f.sessions.Sweep()
	if n := f.sessions.Len(); n != 0 {
		t.Fatalf("%d sessions after their idle time", n)
	}
	if got, _ := get(t, job, "sales/day=1/a.parquet", ""); got != "sales TWO a" {
		t.Errorf("the session after its idle time: %q, want generation 2's", got)
	}
	publish(t, f.sales, 3, map[string]string{"day=1/a.parquet": "three"}, 1) // collects generation 1, no longer held
	if _, err := os.Stat(filepath.Join(f.sales, generations.Dir, "1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("generation 1 after its sessions ended: %v, want it collected", err)
	}
	if _, err := get(t, f.client("team-a", "pqcache-pin/v1;s=job-4;g=sales:1"), "sales/day=1/a.parquet", ""); errorCode(err) != "NoSuchKey" ||
		!strings.Contains(err.Error(), "generation 1 of Dataset sales is not kept") {
		t.Errorf("a pin of a generation no longer kept: %v", err)
	}
}

// TestSessionsPerNamespaceAreBounded: a namespace past its bound ends its own least recently used
// idle session, and never another namespace's.
func TestSessionsPerNamespaceAreBounded(t *testing.T) {
	f := newFixture(t)
	f.sessions.MaxPerNamespace = 2
	other := f.client("team-b", "pqcache-pin/v1;s=b")
	if _, err := get(t, other, "secret/keys.txt", ""); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s1", "s2", "s3", "s4"} {
		if _, err := get(t, f.client("team-a", "pqcache-pin/v1;s="+s), "readme.txt", ""); err != nil {
			t.Fatalf("session %s: %v", s, err)
		}
	}
	if n := f.sessions.Len(); n != 3 {
		t.Errorf("%d sessions, want team-a's 2 and team-b's 1", n)
	}
	if !f.sessions.Roots()[filepath.Join(filepath.Dir(f.sales), "secret")] {
		t.Error("team-b's session was ended by team-a's")
	}
}

// TestOneSessionServesConcurrentReads: the requests of one session share its generation's open
// index (run with -race): many at once each get their own object's bytes.
func TestOneSessionServesConcurrentReads(t *testing.T) {
	f := newFixture(t)
	c := f.client("team-a", "pqcache-pin/v1;s=many")
	want := map[string]string{"sales/day=1/a.parquet": "sales one a", "sales/day=1/b.parquet": "sales one b", "sales/day=2/a.parquet": "sales two a"}
	errs := make(chan error, 30)
	for i := range 30 {
		go func() {
			key := []string{"sales/day=1/a.parquet", "sales/day=1/b.parquet", "sales/day=2/a.parquet"}[i%3]
			got, err := get(t, c, key, "")
			if err == nil && got != want[key] {
				err = errors.New(key + ": " + got)
			}
			errs <- err
		}()
	}
	for range 30 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := f.sessions.Len(); n != 1 {
		t.Errorf("%d sessions, want the one", n)
	}
}

// TestAGenerationIsServedOnlyUnderItsSource: when a Dataset's source changes, its generations copied
// from the old one are not served under the new one's keys, to a new session or to one that held
// them, nor to a pin of one; the first generation copied from the new source is, to both sessions.
func TestAGenerationIsServedOnlyUnderItsSource(t *testing.T) {
	f := newFixture(t)
	held := f.client("team-a", "pqcache-pin/v1;s=before")
	if _, err := get(t, held, "sales/day=1/a.parquet", ""); err != nil {
		t.Fatal(err)
	}
	f.salesSource = "s3://lake/sales/ at http://another-store"
	for name, c := range map[string]*s3.Client{"the session that held it": held, "a new session": f.client("team-a", "pqcache-pin/v1;s=after")} {
		_, err := get(t, c, "sales/day=1/a.parquet", "")
		if errorCode(err) != "SlowDown" || !strings.Contains(err.Error(), "was copied from "+salesFrom) {
			t.Errorf("%s read generation 1 under the new source: %v", name, err)
		}
		if _, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("lake"), Prefix: aws.String("sales/")}); errorCode(err) != "SlowDown" {
			t.Errorf("%s listed generation 1 under the new source: %v", name, err)
		}
	}
	publishFrom(t, f.sales, 2, map[string]string{"day=1/a.parquet": "from the other store"}, 2, f.salesSource)
	for name, c := range map[string]*s3.Client{"the session that held generation 1": held, "a new session": f.client("team-a", "pqcache-pin/v1;s=later")} {
		if got, err := get(t, c, "sales/day=1/a.parquet", ""); err != nil || got != "from the other store" {
			t.Errorf("%s, after the new source's first generation: %q, %v", name, got, err)
		}
	}
	_, err := get(t, f.client("team-a", "pqcache-pin/v1;s=pinned;g=sales:1"), "sales/day=1/a.parquet", "")
	if errorCode(err) != "InvalidRequest" || !strings.Contains(err.Error(), "the pin names a generation of the old source") {
		t.Errorf("a pin of generation 1 under the new source: %v", err)
	}
}
