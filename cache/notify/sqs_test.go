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

package notify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/test/sqstest"
)

// recordingSink keeps every delivery and its ack for the test to settle.
type recordingSink struct {
	mu    sync.Mutex
	got   []delivery
	added chan struct{}
}

type delivery struct {
	msg  Message
	lost bool
	ack  Ack
}

func newRecordingSink() *recordingSink { return &recordingSink{added: make(chan struct{}, 100)} }

func (r *recordingSink) Deliver(m Message, ack Ack) error {
	r.mu.Lock()
	r.got = append(r.got, delivery{msg: m, ack: ack})
	r.mu.Unlock()
	r.added <- struct{}{}
	return nil
}

func (r *recordingSink) Lost(ack Ack) error {
	r.mu.Lock()
	r.got = append(r.got, delivery{lost: true, ack: ack})
	r.mu.Unlock()
	r.added <- struct{}{}
	return nil
}

func (r *recordingSink) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// waitDeliveries waits until n deliveries arrived.
func (r *recordingSink) waitDeliveries(t *testing.T, n int, within time.Duration) []delivery {
	t.Helper()
	deadline := time.After(within)
	for len(r.deliveries()) < n {
		select {
		case <-r.added:
		case <-deadline:
			t.Fatalf("%d deliveries after %s, want %d", len(r.deliveries()), within, n)
		}
	}
	return r.deliveries()
}

// eventually polls cond every 50 ms for up to within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startSource runs an SQSSource on a goaws queue until the test ends; tune adjusts its settings (for
// moto's queues: its credentials and the default protocol).
func startSource(t *testing.T, _ *sqstest.Server, queueURL string, visibility time.Duration, sink Sink, tune func(*SQSConfig)) *SQSSource {
	t.Helper()
	cfg := SQSConfig{
		QueueURL: queueURL, AccessKeyID: sqstest.AccessKey, SecretAccessKey: sqstest.SecretKey, Region: sqstest.Region,
		WaitTime: time.Second, Visibility: visibility, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		ClientOptions: []func(*sqs.Options){sqstest.ClientOptions},
	}
	if tune != nil {
		tune(&cfg)
	}
	src, err := NewSQSSource(context.Background(), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		src.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("SQSSource.Run did not return within 10 s of its context ending")
		}
	})
	return src
}

func s3Message(key, seq string) string {
	return records(rec("aws:s3", "ObjectCreated:Put", key, seq))
}

func TestSQSSourceDeletesOnlyAfterAck(t *testing.T) {
	srv := sqstest.Start(t)
	const visibility = 2 * time.Second
	q := srv.CreateQueue(t, "events", visibility)
	sink := newRecordingSink()
	src := startSource(t, srv, q, visibility, sink, nil)
	srv.Send(t, q, s3Message("tpch/a+b.parquet", "01"))

	got := sink.waitDeliveries(t, 1, 10*time.Second)
	if c := got[0].msg.Changes; len(c) != 1 || c[0].Key != "tpch/a b.parquet" {
		t.Fatalf("delivered %+v, want the decoded key tpch/a b.parquet", got[0].msg)
	}
	// Held past twice the visibility timeout: the source renews it, so it is neither deleted nor
	// delivered again.
	time.Sleep(2*visibility + time.Second)
	if n := srv.Held(t, q); n != 1 {
		t.Fatalf("queue holds %d messages before the ack, want 1", n)
	}
	if n := len(sink.deliveries()); n != 1 {
		t.Fatalf("message delivered %d times while held, want once (visibility renewed)", n)
	}
	if src.Held() != 1 {
		t.Errorf("source holds %d messages, want 1", src.Held())
	}
	got[0].ack(true)
	eventually(t, 5*time.Second, "message deleted after its ack", func() bool { return srv.Held(t, q) == 0 })
	time.Sleep(visibility + time.Second)
	if n := len(sink.deliveries()); n != 1 {
		t.Errorf("an acknowledged message was delivered again (%d deliveries)", n)
	}
	if h := src.Health(); h.Reason != "" || h.LastReceive.IsZero() || h.Messages != 1 {
		t.Errorf("health = %+v, want healthy with 1 message", h)
	}
}

func TestSQSSourceRedeliversWhatIsNotAcknowledged(t *testing.T) {
	srv := sqstest.Start(t)
	const visibility = time.Second
	q := srv.CreateQueue(t, "events", visibility)
	sink := newRecordingSink()
	startSource(t, srv, q, visibility, sink, nil)
	srv.Send(t, q, s3Message("tpch/a", "01"))
	first := sink.waitDeliveries(t, 1, 10*time.Second)
	first[0].ack(false) // not processed: the source stops renewing and does not delete
	again := sink.waitDeliveries(t, 2, 10*time.Second)
	if c := again[1].msg.Changes; len(c) != 1 || c[0].Key != "tpch/a" {
		t.Fatalf("redelivered %+v, want tpch/a again", again[1].msg)
	}
	if n := srv.Held(t, q); n != 1 {
		t.Errorf("queue holds %d messages, want the unacknowledged one", n)
	}
	again[1].ack(true)
	eventually(t, 5*time.Second, "message deleted after its ack", func() bool { return srv.Held(t, q) == 0 })
}

func TestSQSSourceMaxInFlight(t *testing.T) {
	srv := sqstest.Start(t)
	q := srv.CreateQueue(t, "events", 30*time.Second)
	sink := newRecordingSink()
	startSource(t, srv, q, 30*time.Second, sink, func(c *SQSConfig) { c.MaxInFlight = 2 })
	for i := range 5 {
		srv.Send(t, q, s3Message(fmt.Sprintf("tpch/%d", i), "01"))
	}
	got := sink.waitDeliveries(t, 2, 10*time.Second)
	time.Sleep(1500 * time.Millisecond)
	if n := len(sink.deliveries()); n != 2 {
		t.Fatalf("%d messages delivered while 2 were held with MaxInFlight 2", n)
	}
	got[0].ack(true)
	got[1].ack(true)
	got = sink.waitDeliveries(t, 4, 10*time.Second)
	got[2].ack(true)
	got[3].ack(true)
	got = sink.waitDeliveries(t, 5, 10*time.Second)
	got[4].ack(true)
	eventually(t, 5*time.Second, "all messages deleted", func() bool { return srv.Held(t, q) == 0 })
}

// TestSQSSourceWithDebouncer runs the whole path: goaws → SQSSource → Debouncer → batch → Ack → delete.
func TestSQSSourceWithDebouncer(t *testing.T) {
	srv := sqstest.Start(t)
	q := srv.CreateQueue(t, "events", 30*time.Second)
	batches := make(chan *Batch, 10)
	d := NewDebouncer(DebounceConfig{Window: 200 * time.Millisecond}, func(b *Batch) { batches <- b })
	defer d.Close()
	scope, _ := NewScope("lake", "tpch/", nil, nil, nil)
	d.Configure(dsKey, scope)
	startSource(t, srv, q, 30*time.Second, d.For(dsKey), nil)

	srv.Send(t, q, awsTestEvent)                                // not the Dataset's: left in the queue
	srv.Send(t, q, s3Message("raw/other.parquet", "01"))        // outside the prefix: left in the queue
	srv.Send(t, q, snsWrap(s3Message("tpch/orders/x+1", "0A"))) // SNS-wrapped
	srv.Send(t, q, s3Message("tpch/orders/x+1", "09"))          // older, arrives later
	var b *Batch
	select {
	case b = <-batches:
	case <-time.After(15 * time.Second):
		t.Fatal("no batch")
	}
	if len(b.Changes) != 1 || b.Changes[0].Key != "tpch/orders/x 1" || b.Changes[0].Sequencer != "0A" {
		t.Fatalf("batch = %+v, want tpch/orders/x 1 at sequencer 0A", b.Changes)
	}
	// Held counts visible and in-flight messages alike: the two the Dataset does not own stay.
	if n := srv.Held(t, q); n != 4 {
		t.Fatalf("%d messages in the queue before the ack, want 4", n)
	}
	b.Ack(Outcome{})
	eventually(t, 5*time.Second, "batch messages deleted after the ack", func() bool { return srv.Held(t, q) == 2 })

	// A message that is not an event notification forces a listing; it is deleted once that is done.
	srv.Send(t, q, `{"hello":"world"}`)
	select {
	case b = <-batches:
	case <-time.After(15 * time.Second):
		t.Fatal("no batch for the unreadable message")
	}
	if b.Overflow != OverflowEventsLost {
		t.Fatalf("batch = %+v, want an EventsLost overflow", b)
	}
	if n := srv.Held(t, q); n != 3 {
		t.Fatalf("the unreadable message was deleted before the listing sync was acknowledged (%d held)", n)
	}
	b.Ack(Outcome{})
	eventually(t, 5*time.Second, "unreadable message deleted after the ack", func() bool { return srv.Held(t, q) == 2 })
	s, _ := d.Stats(dsKey)
	if s.Received != 3 || s.Ignored != 1 || s.Coalesced != 1 || s.Applied != 1 || s.Lost != 1 {
		t.Errorf("stats = %+v, want 3 received, 1 ignored, 1 coalesced, 1 applied, 1 lost", s)
	}
}

// TestSQSSourceLeavesWhatIsNotTheDatasets: a queue may have other consumers. A message with nothing
// for the Dataset (another prefix, a test event) is never deleted: once its visibility timeout ends,
// another consumer receives it, whole.
func TestSQSSourceLeavesWhatIsNotTheDatasets(t *testing.T) {
	srv := sqstest.Start(t)
	q := srv.CreateQueue(t, "shared", time.Second)
	d := NewDebouncer(DebounceConfig{Window: 100 * time.Millisecond}, func(b *Batch) { b.Ack(Outcome{}) })
	defer d.Close()
	scope, _ := NewScope("lake", "tpch/", nil, nil, nil)
	d.Configure(dsKey, scope)
	startSource(t, srv, q, time.Second, d.For(dsKey), nil)
	other := s3Message("raw/other.parquet", "01")
	srv.Send(t, q, other)
	srv.Send(t, q, awsTestEvent)
	eventually(t, 10*time.Second, "the Dataset saw the message outside its prefix", func() bool {
		s, _ := d.Stats(dsKey)
		return s.Received >= 1
	})
	// Past the source's visibility timeout, the messages are there for the queue's other consumers
	// (the source, still polling, takes them too now and then, and leaves them again). The two
	// consumers race for each message at every visibility expiry; under a loaded machine the source
	// won them all for 15 s once (make test), so the other gets 45.
	seen := map[string]bool{}
	eventually(t, 45*time.Second, "another consumer receives both messages", func() bool {
		out, err := srv.Client().ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			seen[aws.ToString(m.Body)] = true
		}
		return seen[other] && seen[awsTestEvent]
	})
}

func TestSQSSourceHealth(t *testing.T) {
	srv := sqstest.Start(t)
	q := srv.CreateQueue(t, "events", 30*time.Second)
	sink := newRecordingSink()
	src := startSource(t, srv, srv.Endpoint+"/100010001000/missing", 30*time.Second, sink, nil)
	eventually(t, 10*time.Second, "queue reported missing", func() bool { return src.Health().Reason == wire.ReasonQueueNotFound })

	// A server that is down is Unavailable; once it is back with the queue, the source recovers.
	src2 := startSource(t, srv, q, 30*time.Second, sink, nil)
	eventually(t, 10*time.Second, "healthy", func() bool { h := src2.Health(); return h.Reason == "" && !h.LastReceive.IsZero() })
	srv.Kill()
	eventually(t, 10*time.Second, "server down reported", func() bool { return src2.Health().Reason == wire.ReasonUnavailable })
	srv.Restart(t)
	eventually(t, 10*time.Second, "missing queue after the restart", func() bool { return src2.Health().Reason == wire.ReasonQueueNotFound })
	srv.CreateQueue(t, "events", 30*time.Second)
	eventually(t, 10*time.Second, "recovered", func() bool { return src2.Health().Reason == "" })
	srv.Send(t, q, s3Message("tpch/a", "01"))
	sink.waitDeliveries(t, 1, 10*time.Second)
}

func TestClassifySQS(t *testing.T) {
	api := func(code string) error {
		return &smithy.OperationError{ServiceID: "SQS", OperationName: "ReceiveMessage", Err: &smithy.GenericAPIError{Code: code, Message: "m"}}
	}
	tests := []struct {
		err  error
		want string
	}{
		{&types.QueueDoesNotExist{}, wire.ReasonQueueNotFound},
		{fmt.Errorf("wrapped: %w", &types.QueueDoesNotExist{ErrorCodeOverride: aws.String("AWS.SimpleQueueService.NonExistentQueue")}), wire.ReasonQueueNotFound},
		{api("AWS.SimpleQueueService.NonExistentQueue"), wire.ReasonQueueNotFound},
		{api("AccessDenied"), wire.ReasonAccessDenied},
		{api("AccessDeniedException"), wire.ReasonAccessDenied},
		{&types.KmsAccessDenied{}, wire.ReasonAccessDenied},
		{api("InvalidClientTokenId"), wire.ReasonInvalidCredentials},
		{api("SignatureDoesNotMatch"), wire.ReasonInvalidCredentials},
		{api("UnrecognizedClientException"), wire.ReasonInvalidCredentials},
		{api("ExpiredToken"), wire.ReasonInvalidCredentials},
		{api("RequestThrottled"), wire.ReasonUnavailable},
		{errors.New("dial tcp 127.0.0.1:1: connection refused"), wire.ReasonUnavailable},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := ClassifySQS(tt.err); got != tt.want {
			t.Errorf("ClassifySQS(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestRegionFromQueueURL(t *testing.T) {
	for host, want := range map[string]string{
		"sqs.eu-west-1.amazonaws.com":      "eu-west-1",
		"eu-central-1.queue.amazonaws.com": "eu-central-1",
		"sqs.cn-north-1.amazonaws.com.cn":  "cn-north-1",
		"127.0.0.1:4100":                   "",
		"sqs.example.com":                  "",
	} {
		if got := regionFromQueueURL(host); got != want {
			t.Errorf("regionFromQueueURL(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestBackoffIsBounded(t *testing.T) {
	for n := 1; n < 100; n++ {
		d := backoff(time.Second, time.Minute, n)
		if d <= 0 || d > time.Minute {
			t.Fatalf("backoff after %d failures = %s, want within (0, 1m]", n, d)
		}
		if n == 1 && d > time.Second {
			t.Errorf("first backoff %s exceeds the minimum", d)
		}
	}
	if d := backoff(time.Second, time.Minute, 30); d < 48*time.Second {
		t.Errorf("backoff after 30 failures = %s, want near the 1m cap", d)
	}
}
