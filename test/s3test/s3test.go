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

// Package s3test starts a real S3-compatible server (versitygw) on 127.0.0.1 for tests: a free port,
// a temporary posix root, known credentials, and a health check before the test goes on. Every S3
// test in pqcache uses it instead of a fake, because fakes disagree with real servers on exactly the
// details a sync engine depends on (conditional GETs, pagination, checksums).
//
// The binary is found through $PQCACHE_VERSITYGW or bin/versitygw at the module root; `make versitygw`
// builds it from the Go module proxy.
package s3test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqcache/pqcache/test/testproc"
)

// Credentials and region of every server this package starts. They are test-only values.
const (
	AccessKey = "pqcache-test"
	SecretKey = "pqcache-test-secret"
	Region    = "us-east-1"
)

// Server is a running versitygw.
type Server struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT.
	Endpoint string
	// Root is the posix directory the server stores buckets in: object KEY of bucket B is the file
	// Root/B/KEY, which lets a test corrupt or truncate an object behind the server's back.
	Root string

	addr string
	bin  string
	proc testproc.Process
	// args are the flags before the backend (TLS, extra flags); health trusts the TLS CA.
	args   []string
	health *http.Client
}

// Start starts a versitygw on a free 127.0.0.1 port with an empty root and stops it when the test
// ends. It fails the test, with the server's log, if the server does not come up.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, nil)
}

// StartWithArgs starts a server like Start, with extra versitygw flags before the backend (for
// example --event-webhook-url URL, which versitygw checks by posting a test event at start-up).
func StartWithArgs(t testing.TB, args ...string) *Server {
	t.Helper()
	return start(t, &setup{extra: args})
}

// StartTLS starts a server that serves HTTPS with a certificate for 127.0.0.1 signed by a private CA
// made for the test, as S3-compatible stores inside companies often do. It returns the server and the
// CA certificate (PEM); clients must be told to trust it.
func StartTLS(t testing.TB) (*Server, []byte) {
	t.Helper()
	ca, certPEM, keyPEM, err := newTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return start(t, &setup{args: []string{"--cert", certFile, "--key", keyFile}, pool: pool}), ca
}

// setup holds the optional parts of a server: TLS (flags and CA pool) and extra flags.
type setup struct {
	args  []string
	pool  *x509.CertPool
	extra []string
}

func start(t testing.TB, opt *setup) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &Server{Root: filepath.Join(dir, "root"), bin: bin, health: &http.Client{Timeout: time.Second}}
	s.proc = testproc.Process{Name: "versitygw", LogPath: filepath.Join(dir, "versitygw.log"), Client: s.health}
	scheme := "http://"
	if opt != nil && opt.pool != nil {
		scheme = "https://"
		s.health.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: opt.pool}}
	}
	if opt != nil {
		s.args = append(append([]string(nil), opt.args...), opt.extra...)
	}
	if err := os.Mkdir(s.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	err = testproc.OnFreePort(func(addr string) error {
		s.addr, s.Endpoint = addr, scheme+addr
		return s.start()
	})
	if err != nil {
		t.Fatalf("starting versitygw: %v\n%s", err, s.proc.LogTail())
	}
	t.Cleanup(s.Stop)
	return s
}

// Binary returns the path of the versitygw binary the tests use.
func Binary() (string, error) { return testproc.Binary("PQCACHE_VERSITYGW", "versitygw") }

// start launches the server on s.addr and waits until its health endpoint answers.
func (s *Server) start() error {
	s.proc.Health = s.Endpoint + "/health"
	args := append([]string{"--port", s.addr, "--health", "/health"}, s.args...)
	return s.proc.Start(s.bin, append(args, "posix", s.Root), []string{"ROOT_ACCESS_KEY=" + AccessKey, "ROOT_SECRET_KEY=" + SecretKey})
}

// Kill stops the server at once with SIGKILL, as a crash would: requests in flight fail mid-transfer.
// The root directory is kept, so Restart brings the same objects back.
func (s *Server) Kill() { s.proc.Kill() }

// Restart starts a killed server again on the same address and root.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		t.Fatalf("restarting versitygw: %v\n%s", err, s.proc.LogTail())
	}
}

// Stop ends the server; it is registered with t.Cleanup by Start.
func (s *Server) Stop() { s.proc.Stop() }

// newTLSMaterial makes a CA and a server certificate for 127.0.0.1 signed by it.
func newTLSMaterial() (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pqcache test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// Client returns an S3 client for the server, configured explicitly (static credentials, path-style
// addressing) so that nothing in the environment — AWS_PROFILE, AWS_CA_BUNDLE — changes what it does.
func (s *Server) Client(optFns ...func(*s3.Options)) *s3.Client {
	opts := []func(*s3.Options){func(o *s3.Options) {
		if s.health.Transport != nil {
			o.HTTPClient = &http.Client{Transport: s.health.Transport}
		}
	}}
	return s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		// S3-compatible servers differ in the checksums they accept; ask for them only where an
		// operation requires one, as the sync engine does.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}, append(opts, optFns...)...)
}

// CreateBucket creates a bucket and fails the test if it cannot.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	if _, err := s.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
}

// PutObject writes an object and fails the test if it cannot.
func (s *Server) PutObject(t testing.TB, bucket, key string, body []byte) {
	t.Helper()
	_, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
	})
	if err != nil {
		t.Fatalf("putting s3://%s/%s: %v", bucket, key, err)
	}
}
