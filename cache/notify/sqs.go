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
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/pqcache/pqcache/api/wire"
)

// Defaults of SQSConfig.
const (
	// DefaultWaitTime is SQS's longest long poll: one request per 20 s on an idle queue.
	DefaultWaitTime = 20 * time.Second
	// DefaultVisibility is how long a received message stays hidden from other consumers; the source
	// renews it while the message's batch is pending, so it only bounds how soon a message comes back
	// after pqcache stops without acknowledging it.
	DefaultVisibility = 60 * time.Second
	// DefaultMaxInFlight bounds the messages held unacknowledged; beyond it the source stops receiving
	// and the queue keeps the rest.
	DefaultMaxInFlight = 1000
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait after a failed receive.
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = time.Minute
)

// maxBatch is SQS's limit on messages per receive and entries per batch request.
const maxBatch = 10

// deleteAttempts bounds how often one delete is retried; a message whose delete keeps failing comes
// back after its visibility timeout and is processed again (delivery is at least once).
const deleteAttempts = 5

// SQSConfig says which queue to poll and how.
type SQSConfig struct {
	// QueueURL is the queue's URL, as SQS's GetQueueUrl returns it.
	QueueURL string
	// Region; empty takes it from an AWS queue URL (https://sqs.REGION.amazonaws.com/…), then from
	// the AWS configuration, then us-east-1.
	Region string
	// Endpoint of an SQS-compatible server; empty means AWS, or the queue URL's scheme and host when
	// that host is not AWS's.
	Endpoint string
	// AccessKeyID, SecretAccessKey and SessionToken, when AccessKeyID is set, are used as static
	// credentials and nothing is read from the environment or shared files (so AWS_CA_BUNDLE,
	// AWS_PROFILE and the like change nothing). Otherwise the standard AWS chain applies.
	AccessKeyID, SecretAccessKey, SessionToken string
	// Keys says how the messages spell object keys (see KeyEncoding).
	Keys KeyEncoding
	// WaitTime, MaxMessages, Visibility, MaxInFlight, MinBackoff, MaxBackoff: zero takes the defaults.
	WaitTime    time.Duration
	MaxMessages int32
	Visibility  time.Duration
	MaxInFlight int
	MinBackoff  time.Duration
	MaxBackoff  time.Duration
	// ClientOptions adjust the SQS client (tests switch the wire protocol for goaws).
	ClientOptions []func(*sqs.Options)
	// Client, when set, is used as is; Region, Endpoint and credentials are then ignored.
	Client *sqs.Client
	// Log receives the source's logs; nil discards them.
	Log *slog.Logger
}

// ClassifySQS maps an SQS error to the reason the Dataset's EventSource condition gives:
// wire.ReasonQueueNotFound, ReasonAccessDenied or ReasonInvalidCredentials; every other error is
// wire.ReasonUnavailable.
func ClassifySQS(err error) string {
	if err == nil {
		return ""
	}
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) {
		return wire.ReasonQueueNotFound
	}
	var kms *types.KmsAccessDenied
	if errors.As(err, &kms) {
		return wire.ReasonAccessDenied
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "NonExistentQueue":
			return wire.ReasonQueueNotFound
		case "AccessDenied", "AccessDeniedException", "KMS.AccessDeniedException", "KmsAccessDenied":
			return wire.ReasonAccessDenied
		case "InvalidClientTokenId", "SignatureDoesNotMatch", "UnrecognizedClientException", "InvalidSecurity",
			"IncompleteSignature", "MissingAuthenticationToken", "InvalidAccessKeyId", "ExpiredToken", "AuthFailure":
			return wire.ReasonInvalidCredentials
		}
	}
	return wire.ReasonUnavailable
}

// Health is a source's state, for the Dataset's condition.
type Health struct {
	// Reason is empty while the source works, else the reason ClassifySQS gives.
	Reason string
	// Message is the last error (no secrets: SDK errors carry none).
	Message string
	// Since is when the current state began.
	Since time.Time
	// LastReceive is the last successful receive; Messages counts the messages received.
	LastReceive time.Time
	Messages    int64
}

// SQSSource long-polls one queue and hands each message to a Sink. A message is deleted only after
// its ack settles true; while it waits, its visibility is renewed so no other consumer sees it.
type SQSSource struct {
	cfg    SQSConfig
	client *sqs.Client
	sink   Sink
	log    *slog.Logger

	mu       sync.Mutex
	held     map[string]*heldMessage // by receipt handle
	toDelete []pendingDelete
	stopped  bool
	health   Health
	wake     chan struct{} // a delete is due
	room     chan struct{} // a held message was settled
}

type heldMessage struct {
	id        string
	renewedAt time.Time
}

type pendingDelete struct {
	handle, id string
	attempts   int
}

// NewSQSSource builds a source for cfg that delivers to sink. It makes no request.
func NewSQSSource(ctx context.Context, cfg SQSConfig, sink Sink) (*SQSSource, error) {
	if cfg.QueueURL == "" {
		return nil, errors.New("sqs: no queue URL")
	}
	u, err := url.Parse(cfg.QueueURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("sqs: queue URL %q is not a URL", cfg.QueueURL)
	}
	if cfg.WaitTime <= 0 || cfg.WaitTime > DefaultWaitTime {
		cfg.WaitTime = DefaultWaitTime // SQS refuses longer polls
	}
	if cfg.MaxMessages <= 0 || cfg.MaxMessages > maxBatch {
		cfg.MaxMessages = maxBatch
	}
	if cfg.Visibility <= 0 {
		cfg.Visibility = DefaultVisibility
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client := cfg.Client
	if client == nil {
		if client, err = newSQSClient(ctx, cfg, u); err != nil {
			return nil, err
		}
	}
	return &SQSSource{
		cfg: cfg, client: client, sink: sink, log: log.With("queue", cfg.QueueURL),
		held: map[string]*heldMessage{}, wake: make(chan struct{}, 1), room: make(chan struct{}, 1),
	}, nil
}

func newSQSClient(ctx context.Context, cfg SQSConfig, u *url.URL) (*sqs.Client, error) {
	region := cfg.Region
	if region == "" {
		region = regionFromQueueURL(u.Host)
	}
	endpoint := cfg.Endpoint
	if endpoint == "" && !isAWSHost(u.Host) {
		endpoint = u.Scheme + "://" + u.Host
	}
	opts := append([]func(*sqs.Options){func(o *sqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}}, cfg.ClientOptions...)
	if cfg.AccessKeyID != "" {
		// Explicit: the SDK reads nothing from the environment.
		if region == "" {
			region = "us-east-1"
		}
		return sqs.New(sqs.Options{
			Region:      region,
			Credentials: credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken),
		}, opts...), nil
	}
	var loadOpts []func(*config.LoadOptions) error
	if region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	return sqs.NewFromConfig(awsCfg, opts...), nil
}

// regionFromQueueURL reads REGION from sqs.REGION.amazonaws.com or the legacy
// REGION.queue.amazonaws.com; "" for any other host.
func regionFromQueueURL(host string) string {
	if !isAWSHost(host) {
		return ""
	}
	parts := strings.Split(host, ".")
	switch {
	case len(parts) >= 4 && parts[0] == "sqs":
		return parts[1]
	case len(parts) >= 4 && parts[1] == "queue":
		return parts[0]
	}
	return ""
}

func isAWSHost(host string) bool {
	host = strings.ToLower(host)
	return strings.HasSuffix(host, ".amazonaws.com") || strings.HasSuffix(host, ".amazonaws.com.cn")
}

// Health returns the source's state.
func (s *SQSSource) Health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.health
}

// Held returns how many received messages wait for their ack.
func (s *SQSSource) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// Run polls until ctx is done, then finishes the deletes already acknowledged and returns. The
// goroutines it starts end before it returns. Acks that arrive after Run returned do nothing: their
// messages come back after the visibility timeout.
func (s *SQSSource) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.deleteLoop(ctx) })
	wg.Go(func() { s.renewLoop(ctx) })
	s.receiveLoop(ctx)
	wg.Wait()
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}

func (s *SQSSource) receiveLoop(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		n := s.waitForRoom(ctx)
		if n == 0 {
			return
		}
		out, err := s.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(s.cfg.QueueURL),
			MaxNumberOfMessages: n,
			WaitTimeSeconds:     int32(s.cfg.WaitTime / time.Second),
			VisibilityTimeout:   int32(s.cfg.Visibility / time.Second),
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			wait := backoff(s.cfg.MinBackoff, s.cfg.MaxBackoff, failures)
			class := s.setFailed(err)
			s.log.Warn("Receiving from the SQS queue failed", "class", class, "error", err, "retryIn", wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			continue
		}
		failures = 0
		s.setReceived(len(out.Messages))
		for _, m := range out.Messages {
			s.handle(m)
		}
	}
}

// waitForRoom blocks until fewer than MaxInFlight messages are held and returns how many the next
// receive may take; 0 when ctx ended.
func (s *SQSSource) waitForRoom(ctx context.Context) int32 {
	for {
		s.mu.Lock()
		free := s.cfg.MaxInFlight - len(s.held)
		s.mu.Unlock()
		if free > 0 {
			return int32(min(free, int(s.cfg.MaxMessages)))
		}
		select {
		case <-ctx.Done():
			return 0
		case <-s.room:
		}
	}
}

func (s *SQSSource) handle(m types.Message) {
	handle, id := aws.ToString(m.ReceiptHandle), aws.ToString(m.MessageId)
	now := time.Now()
	s.mu.Lock()
	s.held[handle] = &heldMessage{id: id, renewedAt: now}
	s.mu.Unlock()
	var once sync.Once
	ack := func(ok bool) { once.Do(func() { s.settle(handle, id, ok) }) }
	msg, err := Parse([]byte(aws.ToString(m.Body)), s.cfg.Keys)
	if err != nil {
		s.log.Warn("Unreadable SQS message; the Dataset falls back to a listing sync", "messageId", id, "error", err)
		err = s.sink.Lost(ack)
	} else {
		err = s.sink.Deliver(msg, ack)
	}
	if err != nil {
		s.log.Warn("Could not hand an SQS message over; it comes back after its visibility timeout", "messageId", id, "error", err)
		ack(false)
	}
}

// settle forgets a held message and, if ok, queues its delete.
func (s *SQSSource) settle(handle, id string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.held[handle]; !held || s.stopped {
		return
	}
	delete(s.held, handle)
	signal(s.room)
	if ok {
		s.toDelete = append(s.toDelete, pendingDelete{handle: handle, id: id})
		signal(s.wake)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// deleteLoop sends acknowledged deletes in batches of up to 10. When ctx ends it sends what is
// already queued, bounded by a short timeout.
func (s *SQSSource) deleteLoop(ctx context.Context) {
	failures := 0
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			s.deleteQueued(final)
			cancel()
			return
		case <-s.wake:
		}
		if s.deleteQueued(ctx) {
			failures = 0
			continue
		}
		failures++
		select {
		case <-ctx.Done():
		case <-time.After(backoff(s.cfg.MinBackoff, s.cfg.MaxBackoff, failures)):
			signal(s.wake)
		}
	}
}

// deleteQueued deletes every queued message; it reports false if a request failed (the entries
// are queued again, up to deleteAttempts).
func (s *SQSSource) deleteQueued(ctx context.Context) bool {
	s.mu.Lock()
	queued := s.toDelete
	s.toDelete = nil
	s.mu.Unlock()
	ok := true
	for len(queued) > 0 {
		chunk := queued[:min(maxBatch, len(queued))]
		queued = queued[len(chunk):]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, d := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: aws.String(d.handle)}
		}
		out, err := s.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.cfg.QueueURL), Entries: entries})
		if err != nil {
			ok = false
			s.log.Warn("Deleting acknowledged SQS messages failed", "messages", len(chunk), "class", ClassifySQS(err), "error", err)
			s.requeueDeletes(chunk)
			continue
		}
		for _, f := range out.Failed {
			// ReceiptHandleIsInvalid: the message came back after its visibility expired and will
			// be processed again; nothing to retry with this handle.
			s.log.Warn("SQS did not delete an acknowledged message", "code", aws.ToString(f.Code), "message", aws.ToString(f.Message))
		}
	}
	return ok
}

func (s *SQSSource) requeueDeletes(chunk []pendingDelete) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range chunk {
		if d.attempts++; d.attempts < deleteAttempts {
			s.toDelete = append(s.toDelete, d)
		} else {
			s.log.Warn("Giving up deleting an SQS message; it will be processed again", "messageId", d.id)
		}
	}
}

// renewLoop keeps held messages invisible: every third of the visibility timeout it renews those
// not renewed for that long.
func (s *SQSSource) renewLoop(ctx context.Context) {
	period := s.cfg.Visibility / 3
	tick := time.NewTicker(period)
	defer tick.Stop()
	seconds := int32(s.cfg.Visibility / time.Second)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		var due []string
		s.mu.Lock()
		for h, m := range s.held {
			if now.Sub(m.renewedAt) >= period {
				due = append(due, h)
			}
		}
		s.mu.Unlock()
		// One request per message: goaws has no ChangeMessageVisibilityBatch, and MaxInFlight bounds
		// the count.
		for _, h := range due {
			_, err := s.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(s.cfg.QueueURL), ReceiptHandle: aws.String(h), VisibilityTimeout: seconds,
			})
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.Warn("Renewing the visibility of a held SQS message failed; it may be delivered again", "class", ClassifySQS(err), "error", err)
				continue
			}
			s.mu.Lock()
			if m, ok := s.held[h]; ok {
				m.renewedAt = now
			}
			s.mu.Unlock()
		}
	}
}

func (s *SQSSource) setFailed(err error) string {
	reason := ClassifySQS(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.health.Reason != reason {
		s.health.Since = time.Now()
	}
	s.health.Reason, s.health.Message = reason, err.Error()
	return reason
}

func (s *SQSSource) setReceived(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.health.Reason != "" || s.health.Since.IsZero() {
		if s.health.Reason != "" {
			s.log.Info("Receiving from the SQS queue works again", "after", s.health.Reason)
		}
		s.health.Reason, s.health.Message, s.health.Since = "", "", now
	}
	s.health.LastReceive = now
	s.health.Messages += int64(n)
}

// backoff is the wait after the n-th consecutive failure: min doubling up to max, with up to 20%
// jitter so that many sources do not retry in step.
func backoff(minWait, maxWait time.Duration, n int) time.Duration {
	d := minWait
	for i := 1; i < n && d < maxWait; i++ {
		d *= 2
	}
	d = min(d, maxWait)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}
