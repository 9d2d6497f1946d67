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

package sqstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// These tests pin down how far goaws behaves like SQS, for the behaviours pqcache's SQS source relies
// on. Where goaws departs from SQS the test says so and asserts what goaws does, so a goaws upgrade
// that changes it shows up here; docs/events.md lists the differences.

func receive(t *testing.T, c *sqs.Client, url string, wait int32) []types.Message {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: wait, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatalf("receiving from %s: %v", url, err)
	}
	return out.Messages
}

func TestLongPollReturnsWhenAMessageArrives(t *testing.T) {
	s := Start(t)
	url := s.CreateQueue(t, "longpoll", 30*time.Second)
	go func() {
		time.Sleep(300 * time.Millisecond)
		s.Send(t, url, `{"hello":"world & <xml>"}`)
	}()
	start := time.Now()
	msgs := receive(t, s.Client(), url, 10)
	if len(msgs) != 1 || aws.ToString(msgs[0].Body) != `{"hello":"world & <xml>"}` {
		t.Fatalf("long poll got %+v, want the one message sent during the wait", msgs)
	}
	// A long poll that returned empty-handed after the full wait would have taken 10 s.
	if waited := time.Since(start); waited >= 10*time.Second {
		t.Errorf("long poll waited %s: it did not return when the message arrived", waited)
	}
	if got := receive(t, s.Client(), url, 1); len(got) != 0 {
		t.Errorf("an in-flight message was received again before its visibility timeout: %+v", got)
	}
}

func TestVisibilityTimeoutRedeliversWithANewReceiptHandle(t *testing.T) {
	s := Start(t)
	c := s.Client()
	url := s.CreateQueue(t, "visibility", time.Second)
	s.Send(t, url, "m1")
	first := receive(t, c, url, 1)
	if len(first) != 1 {
		t.Fatalf("got %d messages, want 1", len(first))
	}
	// goaws expires visibility in a once-a-second sweep, so redelivery comes 1-2 s after a 1 s timeout.
	again := receive(t, c, url, 5)
	if len(again) != 1 || aws.ToString(again[0].MessageId) != aws.ToString(first[0].MessageId) {
		t.Fatalf("after the visibility timeout got %+v, want message %s again", again, aws.ToString(first[0].MessageId))
	}
	if aws.ToString(again[0].ReceiptHandle) == aws.ToString(first[0].ReceiptHandle) {
		t.Error("a redelivered message kept its receipt handle; SQS issues a new one per receive")
	}

	// Extending the visibility of the current receipt keeps the message hidden past the queue's timeout.
	if _, err := c.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: again[0].ReceiptHandle, VisibilityTimeout: 10,
	}); err != nil {
		t.Fatalf("ChangeMessageVisibility: %v", err)
	}
	if got := receive(t, c, url, 3); len(got) != 0 {
		t.Errorf("a message whose visibility was extended to 10 s came back within 3 s: %+v", got)
	}

	// Not faithful: goaws ignores ReceiveMessage's VisibilityTimeout and applies the queue's.
	s.Send(t, url, "m2")
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 30})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receiving m2: %v, %d messages", err, len(out.Messages))
	}
	if got := receive(t, c, url, 4); len(got) != 1 || aws.ToString(got[0].Body) != "m2" {
		t.Errorf("goaws now honours ReceiveMessage's VisibilityTimeout (m2 stayed hidden): update docs/events.md; got %+v", got)
	}
}

func TestDeleteMessageBatch(t *testing.T) {
	s := Start(t)
	c := s.Client()
	url := s.CreateQueue(t, "delete", time.Second)
	for _, body := range []string{"a", "b", "c"} {
		s.Send(t, url, body)
	}
	msgs := receive(t, c, url, 1)
	if len(msgs) != 3 {
		t.Fatalf("got %d messages, want 3", len(msgs))
	}
	out, err := c.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("0"), ReceiptHandle: msgs[0].ReceiptHandle},
		{Id: aws.String("1"), ReceiptHandle: msgs[1].ReceiptHandle},
	}})
	if err != nil {
		t.Fatalf("DeleteMessageBatch: %v", err)
	}
	if len(out.Successful) != 2 || len(out.Failed) != 0 {
		t.Errorf("DeleteMessageBatch: %d successful, %d failed; want 2 and 0", len(out.Successful), len(out.Failed))
	}
	if n := s.Held(t, url); n != 1 {
		t.Errorf("queue holds %d messages after deleting 2 of 3", n)
	}

	// Not faithful: a receipt handle from before a redelivery neither deletes the message nor shows
	// up in Failed (SQS either deletes it or reports ReceiptHandleIsInvalid).
	stale := msgs[2].ReceiptHandle
	if again := receive(t, c, url, 5); len(again) != 1 {
		t.Fatalf("message c was not redelivered: %+v", again)
	}
	out, err = c.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: stale}}})
	if err != nil {
		t.Fatalf("DeleteMessageBatch with a stale handle: %v", err)
	}
	if len(out.Successful) != 0 || len(out.Failed) != 0 || s.Held(t, url) != 1 {
		t.Errorf("goaws changed how it treats a stale receipt handle: %d successful, %d failed, %d held; update docs/events.md", len(out.Successful), len(out.Failed), s.Held(t, url))
	}
}

func TestQueueDoesNotExist(t *testing.T) {
	s := Start(t)
	_, err := s.Client().ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(s.Endpoint + "/100010001000/missing"), WaitTimeSeconds: 1})
	var missing *types.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Fatalf("receiving from a missing queue: %v (%T), want *types.QueueDoesNotExist", err, err)
	}
}

func TestJSONProtocolIsNotSpoken(t *testing.T) {
	s := Start(t)
	// The SDK's default protocol, AWS JSON 1.0, which real SQS speaks: goaws v0.4.5 answers 400.
	c := sqs.New(sqs.Options{Region: Region, BaseEndpoint: aws.String(s.Endpoint), Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, "")})
	if _, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("json")}); err == nil {
		t.Error("goaws answered a JSON-protocol request: ClientOptions may no longer be needed; update sqstest and docs/events.md")
	}
}

func TestKillAndRestartLosesQueues(t *testing.T) {
	s := Start(t)
	url := s.CreateQueue(t, "gone", time.Second)
	s.Kill()
	if _, err := s.Client().ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); err == nil {
		t.Fatal("a killed server answered")
	}
	s.Restart(t)
	_, err := s.Client().ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	var missing *types.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Fatalf("after a restart: %v, want QueueDoesNotExist (goaws keeps queues in memory)", err)
	}
}
