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
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/schemas"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"
)

// Credentials and region the clients sign with. goaws checks no signature.
const (
	AccessKey = "pqcache-test"
	SecretKey = "pqcache-test-secret"
	Region    = "us-east-1"
)

const startTimeout = 15 * time.Second

// Server is a running goaws. Its queues live in memory: Kill loses them.
type Server struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT.
	Endpoint string

	addr    string
	bin     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Start starts goaws on a free 127.0.0.1 port and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{bin: bin, logPath: filepath.Join(t.TempDir(), "goaws.log")}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s.addr = "127.0.0.1:" + strconv.Itoa(port)
		s.Endpoint = "http://" + s.addr
		if err = s.start(); err == nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("starting goaws: %v\n%s", err, s.logTail())
		}
	}
	t.Cleanup(s.Stop)
	return s
}

// Binary returns the path of the goaws binary the tests use.
func Binary() (string, error) {
	if p := os.Getenv("PQCACHE_GOAWS"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("PQCACHE_GOAWS=%s: %w", p, err)
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "goaws")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("goaws not found at %s: run `make goaws` to build it, or set PQCACHE_GOAWS", p)
	}
	return p, nil
}

func (s *Server) start() error {
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(s.bin, "-listen", s.addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("running %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("goaws exited during start-up (%v)", cmd.ProcessState)
		default:
		}
		if resp, err := client.Get(s.Endpoint + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Kill()
	return fmt.Errorf("goaws on %s not healthy after %s", s.addr, startTimeout)
}

// Kill stops the server at once with SIGKILL; its queues are gone.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// Restart starts a killed server again on the same address, with no queues.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		t.Fatalf("restarting goaws: %v\n%s", err, s.logTail())
	}
}

// Stop ends the server; Start registers it with t.Cleanup.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
		s.cmd = nil
	case <-time.After(5 * time.Second):
		s.Kill()
	}
}

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

func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return "(no goaws log: " + err.Error() + ")"
	}
	const max = 4 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return "goaws log:\n" + strings.TrimSpace(string(b))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}
