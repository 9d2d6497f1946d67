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

// Package sqstest starts a real SQS-compatible server (goaws, through the wrapper in hack/goaws that
// binds 127.0.0.1) for tests: a free port, a health check before the test goes on, and clients set
// up for it.
//
// goaws v0.4.5 speaks only SQS's query protocol (form-encoded Action=…, XML answers), while
// aws-sdk-go-v2 speaks AWS JSON 1.0 by default; real SQS serves both. Client and ClientOptions switch
// the SDK to its own awsQuery implementation, so everything above the wire is the code production
// runs. Where goaws is not faithful to SQS is listed in docs/events.md.
//
// The binary is found through $PQCACHE_GOAWS or bin/goaws at the module root; `make goaws` builds it.
package sqstest

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/schemas"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"

	"github.com/pqcache/pqcache/test/testproc"
)

// Credentials and region the clients sign with. goaws checks no signature.
const (
	AccessKey = "pqcache-test"
	SecretKey = "pqcache-test-secret"
	Region    = "us-east-1"
)

// Server is a running goaws. Its queues live in memory: Kill loses them.
type Server struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT.
	Endpoint string

	addr string
	bin  string
	proc testproc.Process
}

// Start starts goaws on a free 127.0.0.1 port and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{bin: bin, proc: testproc.Process{Name: "goaws", LogPath: filepath.Join(t.TempDir(), "goaws.log")}}
	err = testproc.OnFreePort(func(addr string) error {
		s.addr, s.Endpoint = addr, "http://"+addr
		return s.start()
	})
	if err != nil {
		t.Fatalf("starting goaws: %v\n%s", err, s.proc.LogTail())
	}
	t.Cleanup(s.Stop)
	return s
}

// Binary returns the path of the goaws binary the tests use.
func Binary() (string, error) { return testproc.Binary("PQCACHE_GOAWS", "goaws") }

func (s *Server) start() error {
	s.proc.Health = s.Endpoint + "/health"
	return s.proc.Start(s.bin, []string{"-listen", s.addr}, nil)
}

// Kill stops the server at once with SIGKILL; its queues are gone.
func (s *Server) Kill() { s.proc.Kill() }

// Restart starts a killed server again on the same address, with no queues.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		t.Fatalf("restarting goaws: %v\n%s", err, s.proc.LogTail())
	}
}

// Stop ends the server; Start registers it with t.Cleanup.
func (s *Server) Stop() { s.proc.Stop() }

// ClientOptions switches an SQS client to the query protocol goaws speaks.
func ClientOptions(o *sqs.Options) {
	o.Protocol = awsquery.New(schemas.AmazonSQS)
}

// Client returns an SQS client for the server, configured explicitly (static credentials, endpoint,
// region) so that nothing in the environment changes what it does.
func (s *Server) Client() *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	}, ClientOptions)
}

// CreateQueue creates a queue whose messages stay invisible for visibility after each receive, and
// returns its URL.
func (s *Server) CreateQueue(t testing.TB, name string, visibility time.Duration) string {
	t.Helper()
	out, err := s.Client().CreateQueue(context.Background(), &sqs.CreateQueueInput{
		QueueName:  aws.String(name),
		Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(int(visibility / time.Second))},
	})
	if err != nil {
		t.Fatalf("creating queue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

// Send puts one message on a queue.
func (s *Server) Send(t testing.TB, queueURL, body string) {
	t.Helper()
	if _, err := s.Client().SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)}); err != nil {
		t.Fatalf("sending to %s: %v", queueURL, err)
	}
}

// Held returns how many messages a queue holds, visible or in flight (goaws counts both in
// ApproximateNumberOfMessages; SQS counts only the visible ones there).
func (s *Server) Held(t testing.TB, queueURL string) int {
	t.Helper()
	out, err := s.Client().GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		t.Fatalf("reading attributes of %s: %v", queueURL, err)
	}
	n, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	if err != nil {
		t.Fatalf("ApproximateNumberOfMessages of %s: %v", queueURL, err)
	}
	return n
}
