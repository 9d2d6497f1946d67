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

// Package eventhub is the operator's side of S3 event notifications: the dataset.EventHub the
// manager runs. It keeps each Dataset's source going (an SQS queue it long-polls with the Dataset's
// credentials, or its share of the webhook endpoint, with a token in a Secret), feeds one
// cache/notify Debouncer, holds each Dataset's batch until the Dataset controller has synced it, and
// wakes the controller when one is ready. It is kept out of package controllers so that the
// controllers link no SQS client.
package eventhub

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/notify"
	"github.com/pqcache/pqcache/controllers/dataset"
)

// Options configure a Hub.
type Options struct {
	// Client creates token Secrets; Reader reads Secrets uncached (the manager caches none).
	Client client.Client
	Reader client.Reader
	Scheme *runtime.Scheme
	// BindAddress is where the webhook endpoint listens (host:port); empty: no webhook.
	BindAddress string
	// QueryToken lets the webhook take a Dataset's token from the query string (?token=), for stores
	// that cannot send an Authorization header (notify.WebhookConfig.QueryToken).
	QueryToken bool
	// Debounce tunes the batches; zero fields take cache/notify's defaults.
	Debounce notify.DebounceConfig
	// SQSClientOptions adjust every SQS client (tests switch the wire protocol for goaws; the manager
	// puts its endpoint guard there).
	SQSClientOptions []func(*sqs.Options)
	// AmbientNamespaces may poll, for a Dataset that names no Secret for its queue, with the manager's
	// own identity ("*": every namespace). Elsewhere the queue is not polled and the EventSource
	// condition gives wire.ReasonAmbientCredentialsNotAllowed.
	AmbientNamespaces []string
	// Log receives the hub's logs.
	Log *slog.Logger
}

// Hub implements dataset.EventHub. Start runs it (a manager Runnable).
type Hub struct {
	opts     Options
	log      *slog.Logger
	debounce *notify.Debouncer
	webhook  *notify.Webhook
	wake     chan event.GenericEvent
	// ctx is the hub's lifetime, for the sources it starts; cancel ends them.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	watched  map[types.NamespacedName]*watched
	batches  map[types.NamespacedName]*held
	nextID   uint64
	tokens   map[types.NamespacedName]cachedToken
	listener net.Listener
}

// watched is one Dataset's source as configured.
type watched struct {
	config      string // what the source was started with; a change restarts it
	kind        string // sqs or webhook
	queueURL    string
	tokenSecret string
	// refused, when set, is why the queue is not polled (ambient credentials not allowed).
	refused string
	sqs     *notify.SQSSource
	stop    context.CancelFunc
	done    chan struct{}
}

// held is the batch the Debouncer emitted for a Dataset, until the controller settles it.
type held struct {
	id    string
	batch *notify.Batch
}

type cachedToken struct {
	token string
	at    time.Time
	// refreshing is set while one request reads the Secret again; the others go on with the cached
	// token meanwhile.
	refreshing bool
	// missing is set when the Secret was not found: token is "", and every post is refused.
	missing bool
}

// tokenTTL is how long a webhook token read from its Secret is trusted: a rotated token works within it.
var tokenTTL = 30 * time.Second

// missingTokenTTL is how long a token Secret found missing is taken as missing.
var missingTokenTTL = 30 * time.Second

// New returns a Hub; Start runs its webhook endpoint and Stop (the end of Start's context) its sources.
func New(opts Options) *Hub {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{opts: opts, log: log, wake: make(chan event.GenericEvent, 256), ctx: ctx, cancel: cancel,
		watched: map[types.NamespacedName]*watched{}, batches: map[types.NamespacedName]*held{}, tokens: map[types.NamespacedName]cachedToken{}}
	h.debounce = notify.NewDebouncer(opts.Debounce, h.emit)
	h.webhook = notify.NewWebhook(h.debounce, notify.WebhookConfig{Token: h.token, QueryToken: opts.QueryToken, Log: log})
	return h
}

var _ dataset.EventHub = (*Hub)(nil)

// Start serves the webhook endpoint, if one is configured, until ctx ends; then it stops every
// source. The manager runs it on the leader only: batches are for the controller that acts on them.
func (h *Hub) Start(ctx context.Context) error {
	defer h.stopAll()
	if h.opts.BindAddress == "" {
		<-ctx.Done()
		return nil
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", h.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("listening for event notifications on %s: %w", h.opts.BindAddress, err)
	}
	h.mu.Lock()
	h.listener = l
	h.mu.Unlock()
	srv := notify.NewServer(h.webhook, notify.DefaultServerTimeouts)
	h.log.Info("Serving event notifications", "address", l.Addr().String(), "path", notify.DefaultWebhookPath+"NAMESPACE/NAME")
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shut)
	case err := <-errs:
		return fmt.Errorf("serving event notifications: %w", err)
	}
}

// Addr is where the webhook listens, once Start has bound it (tests bind port 0).
func (h *Hub) Addr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.listener == nil {
		return ""
	}
	return h.listener.Addr().String()
}

// NeedLeaderElection is true: only the leader runs sources and serves the endpoint.
func (h *Hub) NeedLeaderElection() bool { return true }

func (h *Hub) stopAll() {
	h.cancel()
	h.mu.Lock()
	ws := make([]*watched, 0, len(h.watched))
	for _, w := range h.watched {
		ws = append(ws, w)
	}
	h.mu.Unlock()
	for _, w := range ws {
		w.halt()
	}
	h.debounce.Close()
}

// Source wakes the Dataset controller for a Dataset with a new batch or news about its source.
func (h *Hub) Source() source.Source {
	return source.Channel(h.wake, &handler.EnqueueRequestForObject{})
}

func (h *Hub) wakeUp(key types.NamespacedName) {
	obj := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case h.wake <- event.GenericEvent{Object: obj}:
	default: // the controller is behind; its periodic reconciles pick the batch up
	}
}

func hubKey(key types.NamespacedName) string { return key.Namespace + "/" + key.Name }

func nsName(key string) types.NamespacedName {
	ns, name, _ := strings.Cut(key, "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}

// emit receives the Debouncer's batches: one per Dataset at a time (the next waits for this one's
// settlement), held until the controller has synced it.
func (h *Hub) emit(b *notify.Batch) {
	key := nsName(b.Key)
	h.mu.Lock()
	h.nextID++
	h.batches[key] = &held{id: strconv.FormatUint(h.nextID, 10) + "-" + randomHex(4), batch: b}
	h.mu.Unlock()
	h.wakeUp(key)
}

// Watch starts, or reconfigures, a Dataset's source.
func (h *Hub) Watch(ctx context.Context, ds *datav1alpha1.Dataset) error {
	key := client.ObjectKeyFromObject(ds)
	spec := ds.Spec.Refresh.Events
	if spec == nil {
		h.Forget(key)
		return nil
	}
	s3 := ds.Spec.Source.S3
	scope, err := notify.NewScope(s3.Bucket, s3.Prefix, ds.Spec.Include, ds.Spec.Exclude, ds.Spec.Fresh)
	if err != nil {
		return fmt.Errorf("dataset %s: %w", key, err)
	}
	scope.Window, scope.MaxDelay = debounceOf(ds)
	w, cfg := &watched{kind: "webhook"}, notify.SQSConfig{}
	if spec.SQS != nil {
		if w, cfg, err = h.sqsSource(ctx, ds); err != nil {
			return err
		}
	} else {
		w.tokenSecret = dataset.EventTokenSecret(ds)
		if spec.Webhook.TokenSecretRef == nil {
			if err := h.ensureToken(ctx, ds, w.tokenSecret); err != nil {
				return err
			}
		}
		w.config = digest("webhook", w.tokenSecret)
	}
	w.config = digest(w.config, s3.Bucket, s3.Prefix, strings.Join(ds.Spec.Include, ","), strings.Join(ds.Spec.Exclude, ","), strings.Join(ds.Spec.Fresh, ","),
		scope.Window.String(), scope.MaxDelay.String())

	h.mu.Lock()
	old := h.watched[key]
	if old != nil && old.config == w.config {
		h.mu.Unlock()
		return nil
	}
	h.watched[key] = w
	delete(h.tokens, key)
	h.mu.Unlock()
	if old != nil {
		old.halt()
	}
	h.debounce.Configure(hubKey(key), scope)
	if err := h.startSource(ctx, key, w, cfg); err != nil {
		return err
	}
	h.log.Info("Watching event notifications", "dataset", hubKey(key), "source", w.kind)
	return nil
}

// sqsSource describes a Dataset's SQS source and the client configuration it polls with, credentials
// read from the queue's Secret (or the source's).
func (h *Hub) sqsSource(ctx context.Context, ds *datav1alpha1.Dataset) (*watched, notify.SQSConfig, error) {
	key, q := client.ObjectKeyFromObject(ds), ds.Spec.Refresh.Events.SQS
	w := &watched{kind: "sqs", queueURL: q.QueueURL}
	cfg := notify.SQSConfig{QueueURL: q.QueueURL, Region: q.Region, Endpoint: q.Endpoint,
		ClientOptions: h.opts.SQSClientOptions, Log: h.log.With("dataset", hubKey(key))}
	secret := ""
	if q.CredentialsSecretRef != nil {
		secret = q.CredentialsSecretRef.Name
	} else if c := ds.Spec.Source.S3.Credentials; c != nil && c.SecretRef != nil {
		secret = c.SecretRef.Name
	}
	version := ""
	if secret == "" && !wire.AmbientAllowed(h.opts.AmbientNamespaces, ds.Namespace) {
		// Anonymous SQS requests are refused: there is nothing to poll with but the manager's identity.
		w.refused = "the queue is not polled: the Dataset names no credentials Secret for it (spec.refresh.events.sqs.credentialsSecretRef, or the source's secretRef), " +
			"and its namespace may not use pqcache's own identity; name one, or add the namespace to " + wire.AmbientCredentialsSetting
	}
	if secret != "" {
		var sec corev1.Secret
		if err := h.opts.Reader.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: secret}, &sec); err != nil {
			return nil, cfg, fmt.Errorf("reading the queue's credentials secret %s: %w", secret, err)
		}
		cfg.AccessKeyID, cfg.SecretAccessKey = string(sec.Data[wire.EnvAccessKeyID]), string(sec.Data[wire.EnvSecretAccessKey])
		cfg.SessionToken = string(sec.Data[wire.EnvSessionToken])
		version = sec.ResourceVersion
	}
	// The config, never the secret values, identifies what the source was started with.
	w.config = digest("sqs", q.QueueURL, q.Region, q.Endpoint, secret, version, w.refused)
	return w, cfg, nil
}

// startSource starts receiving for a newly watched source: the SQS poller, or the webhook's token.
func (h *Hub) startSource(ctx context.Context, key types.NamespacedName, w *watched, cfg notify.SQSConfig) error {
	if w.kind == "webhook" {
		// Read the token now, not on the first post: a store waits 3 s for an answer and does not
		// retry, and the API server may take longer than that to answer the manager.
		if _, err := h.readToken(ctx, key, w); err != nil {
			h.log.Warn("Reading the webhook token failed; the first post reads it again", "dataset", hubKey(key), "error", err)
		}
		return nil
	}
	if w.refused != "" {
		h.log.Warn("Not polling an SQS queue", "dataset", hubKey(key), "why", w.refused)
		return nil
	}
	src, err := notify.NewSQSSource(h.ctx, cfg, h.debounce.For(hubKey(key)))
	if err != nil {
		return fmt.Errorf("dataset %s: %w", key, err)
	}
	run, stop := context.WithCancel(h.ctx)
	w.sqs, w.stop, w.done = src, stop, make(chan struct{})
	go func() { defer close(w.done); src.Run(run) }()
	return nil
}

func (w *watched) halt() {
	if w.stop != nil {
		w.stop()
		<-w.done
	}
}

// Forget stops a Dataset's source and drops its batches.
func (h *Hub) Forget(key types.NamespacedName) {
	h.mu.Lock()
	w := h.watched[key]
	delete(h.watched, key)
	delete(h.batches, key)
	delete(h.tokens, key)
	h.mu.Unlock()
	if w == nil {
		return
	}
	w.halt()
	h.debounce.Remove(hubKey(key))
	h.log.Info("Stopped watching event notifications", "dataset", hubKey(key))
}

// Pending is the Dataset's batch waiting to be synced.
func (h *Hub) Pending(key types.NamespacedName) *dataset.EventBatch {
	h.mu.Lock()
	defer h.mu.Unlock()
	held := h.batches[key]
	if held == nil {
		return nil
	}
	b := held.batch
	out := &dataset.EventBatch{ID: held.id, Overflow: b.Overflow, Fresh: b.Fresh}
	for _, c := range b.Changes {
		out.Changes = append(out.Changes, wire.Change{Key: c.Key, Removed: c.Removed, Size: c.Size, ETag: c.ETag, Sequencer: c.Sequencer, EventTime: c.EventTime})
	}
	return out
}

// Done settles a Dataset's batch.
func (h *Hub) Done(key types.NamespacedName, id string, applied bool, outcome *wire.ChangeOutcome) (time.Duration, bool) {
	h.mu.Lock()
	held := h.batches[key]
	if held == nil || held.id != id {
		h.mu.Unlock()
		return 0, false // settled already, or from before a restart
	}
	delete(h.batches, key)
	h.mu.Unlock()
	if !applied {
		held.batch.Nack()
		return 0, false
	}
	o := notify.Outcome{}
	if outcome != nil {
		o.Published, o.StaleCount = outcome.PublishedAt, int(outcome.Stale)
	}
	res := held.batch.Ack(o)
	return res.Lag, res.HasLag
}

// unauthorizedRecently is how long after a refused webhook request the source shows TokenRejected.
const unauthorizedRecently = 10 * time.Minute

// Status is a Dataset's event counters and source health.
func (h *Hub) Status(key types.NamespacedName) (datav1alpha1.EventStatus, *dataset.EventProblem) {
	h.mu.Lock()
	w := h.watched[key]
	h.mu.Unlock()
	if w == nil {
		return datav1alpha1.EventStatus{}, &dataset.EventProblem{Reason: wire.ReasonUnavailable, Message: "the event source has not started yet"}
	}
	st := datav1alpha1.EventStatus{Source: w.kind}
	if w.kind == "webhook" {
		st.WebhookPath = notify.DefaultWebhookPath + key.Namespace + "/" + key.Name
		st.TokenSecret = w.tokenSecret
	}
	stats, _ := h.debounce.Stats(hubKey(key))
	st.Received, st.Applied, st.Ignored, st.Stale = stats.Received, stats.Applied, stats.Ignored, stats.Stale
	st.Pending = int64(stats.Pending + stats.InFlight)
	st.LagMillis = stats.LastLag.Milliseconds()
	if !stats.LastEventTime.IsZero() {
		st.LastEventTime = &metav1.Time{Time: stats.LastEventTime.Truncate(time.Second)}
	}
	if !stats.LastPublished.IsZero() {
		st.LastPublishTime = &metav1.Time{Time: stats.LastPublished.Truncate(time.Second)}
	}
	if w.refused != "" {
		return st, &dataset.EventProblem{Reason: wire.ReasonAmbientCredentialsNotAllowed, Message: w.refused + "; the schedule keeps the data fresh meanwhile"}
	}
	if w.sqs != nil {
		if hl := w.sqs.Health(); hl.Reason != "" {
			return st, &dataset.EventProblem{Reason: hl.Reason, Message: fmt.Sprintf("polling %s: %s (since %s); the schedule keeps the data fresh meanwhile",
				w.queueURL, wire.Truncate(hl.Message, 512), hl.Since.UTC().Format(time.RFC3339))}
		}
	}
	if !stats.LastUnauthorized.IsZero() && time.Since(stats.LastUnauthorized) < unauthorizedRecently {
		return st, &dataset.EventProblem{Reason: datav1alpha1.ReasonTokenRejected, Message: fmt.Sprintf(
			"%d notifications were refused for a missing or wrong token, the last at %s: check the token the store sends against Secret %s",
			stats.Unauthorized, stats.LastUnauthorized.UTC().Format(time.RFC3339), w.tokenSecret)}
	}
	return st, nil
}

// token is the webhook's lookup: the token a Dataset expects, read from its Secret (cached briefly).
//
// Once read, a stale token is answered from the cache while one background read refreshes it: a
// store posts with a short timeout and does not retry (versitygw: 3 s), so a request must not wait
// for the API server (the manager's client may be throttled). A rotated token is accepted once the
// refresh is done, a withdrawn one refused from then on.
//
// A Secret found missing is remembered as missing for missingTokenTTL: the endpoint is open to
// anyone who can reach it, and without that every post would be one uncached API read. Once that
// is stale, one request reads the Secret again itself (the others are refused meanwhile), so a
// Secret that appears is accepted within the interval, from the first post after it.
func (h *Hub) token(ctx context.Context, k string) (string, error) {
	key := nsName(k)
	h.mu.Lock()
	w := h.watched[key]
	cached, ok := h.tokens[key]
	refresh := ok && time.Since(cached.at) >= cached.ttl() && !cached.refreshing
	if refresh {
		cached.refreshing = true
		h.tokens[key] = cached
	}
	h.mu.Unlock()
	switch {
	case w == nil || w.kind != "webhook":
		return "", nil // not watched, or not by webhook: refused like a wrong token
	case !ok:
		return h.readToken(ctx, key, w)
	case refresh && cached.missing:
		tok, err := h.readToken(ctx, key, w)
		if err != nil {
			h.endRefresh(key)
		}
		return tok, err
	case refresh:
		go h.refreshToken(key, w)
	}
	return cached.token, nil
}

// ttl is how long the entry is trusted.
func (c cachedToken) ttl() time.Duration {
	if c.missing {
		return missingTokenTTL
	}
	return tokenTTL
}

// refreshToken reads a cached token again. It is bounded, and ends with the hub; a read that lands
// after the source was reconfigured or forgotten changes nothing (readToken checks).
func (h *Hub) refreshToken(key types.NamespacedName, w *watched) {
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	if _, err := h.readToken(ctx, key, w); err != nil {
		h.log.Warn("Reading the webhook token again failed; keeping the one read before", "dataset", hubKey(key), "error", err)
		h.endRefresh(key)
	}
}

// endRefresh lets the next request after a failed read try again.
func (h *Hub) endRefresh(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.tokens[key]; ok {
		c.refreshing = false
		h.tokens[key] = c
	}
}

// readToken reads a Dataset's webhook token from the Secret its source w names and caches it ("" when
// there is none, cached as missing). The cache changes only while w is still the Dataset's source: a read that outlived
// a reconfiguration (another Secret) or the Dataset must not bring the old token back.
func (h *Hub) readToken(ctx context.Context, key types.NamespacedName, w *watched) (string, error) {
	var sec corev1.Secret
	if err := h.opts.Reader.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: w.tokenSecret}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			h.mu.Lock()
			if h.watched[key] == w {
				// Missing or withdrawn: refused, and not read again, until missingTokenTTL passes.
				h.tokens[key] = cachedToken{missing: true, at: time.Now()}
			}
			h.mu.Unlock()
			return "", nil
		}
		return "", fmt.Errorf("reading webhook token secret %s: %w", w.tokenSecret, err)
	}
	tok := strings.TrimSpace(string(sec.Data[dataset.EventTokenKey]))
	h.mu.Lock()
	if h.watched[key] == w {
		h.tokens[key] = cachedToken{token: tok, at: time.Now()}
	}
	h.mu.Unlock()
	return tok, nil
}

// ensureToken creates the Dataset's token Secret, owned by the Dataset, if it does not exist.
func (h *Hub) ensureToken(ctx context.Context, ds *datav1alpha1.Dataset, name string) error {
	var sec corev1.Secret
	err := h.opts.Reader.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: name}, &sec)
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	sec = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "pqcache"}},
		Data:       map[string][]byte{dataset.EventTokenKey: []byte(randomHex(32))},
	}
	if err := controllerutil.SetControllerReference(ds, &sec, h.opts.Scheme); err != nil {
		return err
	}
	if err := h.opts.Client.Create(ctx, &sec); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating webhook token secret %s: %w", name, err)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func digest(parts ...string) string {
	data, _ := json.Marshal(parts)
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:12])
}

// Debounce defaults of a Dataset with spec.replicas: its seed's agent syncs in its own process, so a
// sync costs a listing and the changed objects, not a pod start, and batching buys less.
const (
	replicasWindow   = 200 * time.Millisecond
	replicasMaxDelay = time.Second
)

// debounceOf is the Dataset's window and maximum delay: its spec's, else the replicas defaults for a
// Dataset with spec.replicas, else zero (the hub's).
func debounceOf(ds *datav1alpha1.Dataset) (window, maxDelay time.Duration) {
	if ds.Spec.Replicas != nil {
		window, maxDelay = replicasWindow, replicasMaxDelay
	}
	e := ds.Spec.Refresh.Events
	if e == nil {
		return window, maxDelay
	}
	if e.Window != nil {
		window = e.Window.Duration
	}
	if e.MaxDelay != nil {
		maxDelay = e.MaxDelay.Duration
	}
	return window, maxDelay
}
