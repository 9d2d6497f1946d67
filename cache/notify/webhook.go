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
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// DefaultMaxBody bounds a webhook request body. One record is about 1 KiB; AWS caps a notification
// at 64 KiB and an SQS message at 256 KiB.
const DefaultMaxBody = 1 << 20

// DefaultWebhookPath is where the webhook expects requests: POST /events/NAMESPACE/NAME.
const DefaultWebhookPath = "/events/"

// ServerTimeouts bound how long a webhook's client may take to send a request, to read its answer,
// and to idle between two: a poster that trickles its bytes (slowloris) must not hold a connection,
// and a goroutine, for ever.
type ServerTimeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// DefaultServerTimeouts are a webhook server's. Requests are at most DefaultMaxBody and answers a
// status line, so a whole exchange fits well in them.
var DefaultServerTimeouts = ServerTimeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 30 * time.Second, Idle: 2 * time.Minute}

// NewServer returns the server a webhook is served with, h its handler: the event hub's and the
// watch's.
func NewServer(h http.Handler, t ServerTimeouts) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle}
}

// WebhookConfig configures a Webhook.
type WebhookConfig struct {
	// PathPrefix is the path before NAMESPACE/NAME; empty means DefaultWebhookPath.
	PathPrefix string
	// Token returns the token a Dataset key expects, or "" when the Dataset takes no webhook (the
	// request is then refused like a wrong token). An error answers 503.
	Token func(ctx context.Context, key string) (string, error)
	// MaxBody bounds the request body; zero means DefaultMaxBody.
	MaxBody int64
	// Keys says how posted records spell object keys.
	Keys KeyEncoding
	// QueryToken also takes the token from the query string (?token=TOKEN), for stores that post to a
	// bare URL and cannot send headers (versitygw). Off by default: the token is then in every access
	// log and proxy log that keeps URLs, the store's own included.
	QueryToken bool
	// Log receives the webhook's logs; nil discards them.
	Log *slog.Logger
}

// Webhook is pqcache's endpoint for stores that post event notifications: POST
// {PathPrefix}{namespace}/{name} with the Dataset's token as "Authorization: Bearer TOKEN" or, with
// WebhookConfig.QueryToken, for stores that cannot send headers (versitygw posts to a bare URL), as
// "?token=TOKEN". The token is compared in constant time. It answers 2xx only after the changes are in the Debouncer.
type Webhook struct {
	cfg WebhookConfig
	d   *Debouncer
	log *slog.Logger
}

// NewWebhook returns the handler; it delivers to d, whose keys are "namespace/name".
func NewWebhook(d *Debouncer, cfg WebhookConfig) *Webhook {
	if cfg.PathPrefix == "" {
		cfg.PathPrefix = DefaultWebhookPath
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Webhook{cfg: cfg, d: d, log: log}
}

// webhookReply is the body of a 200 answer: what the Dataset took from the request.
type webhookReply struct {
	Accepted int `json:"accepted"`
	Ignored  int `json:"ignored"`
}

func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		rw.Header().Set("Allow", http.MethodPost)
		http.Error(rw, "use POST", http.StatusMethodNotAllowed)
		return
	}
	key, ok := w.datasetKey(r.URL.Path)
	if !ok {
		http.NotFound(rw, r)
		return
	}
	// Never log r.URL as a whole: its query may hold the token.
	log := w.log.With("dataset", key)
	presented, fromQuery := presentedToken(r)
	if fromQuery && !w.cfg.QueryToken {
		log.Warn("Refused a token in the query string: that form is off (the event hub's --events-query-token, chart value events.queryToken)", "remote", r.RemoteAddr)
		presented = ""
	}
	expected, err := w.cfg.Token(r.Context(), key)
	if err != nil {
		log.Error("Looking up the webhook token failed", "error", err)
		http.Error(rw, "token lookup failed", http.StatusServiceUnavailable)
		return
	}
	if expected == "" || !tokensEqual(presented, expected) {
		w.d.Unauthorized(key)
		log.Warn("Refused a webhook request with a missing or wrong token", "tokenPresented", presented != "", "remote", r.RemoteAddr)
		rw.Header().Set("WWW-Authenticate", `Bearer realm="pqcache"`)
		http.Error(rw, "missing or wrong token", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, w.cfg.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			w.lost(log, key, "body over the limit", err)
			http.Error(rw, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		log.Warn("Reading a webhook request failed", "error", err)
		http.Error(rw, "reading the body failed", http.StatusBadRequest)
		return
	}
	msg, err := Parse(body, w.cfg.Keys)
	if err != nil {
		w.lost(log, key, "unreadable notification", err)
		http.Error(rw, "not an S3 event notification: "+err.Error(), http.StatusBadRequest)
		return
	}
	taken, err := w.d.Add(key, msg, nil)
	if err != nil {
		// The token exists but the Debouncer does not know the Dataset yet (the manager is starting).
		log.Warn("A webhook request arrived for a Dataset not watched yet", "error", err)
		http.Error(rw, "dataset not ready", http.StatusServiceUnavailable)
		return
	}
	log.Debug("Took event notifications", "accepted", taken, "records", len(msg.Changes)+msg.Ignored)
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(webhookReply{Accepted: taken, Ignored: len(msg.Changes) - taken + msg.Ignored})
}

// lost marks a Dataset's events lost after an authenticated request the webhook could not take: the
// sender will not send it again, so only a listing can tell what it held.
func (w *Webhook) lost(log *slog.Logger, key, why string, err error) {
	log.Warn("Refused a webhook notification; the Dataset falls back to a listing sync", "why", why, "error", err)
	if lerr := w.d.Lost(key, nil); lerr != nil {
		log.Warn("Could not mark the Dataset's events lost", "error", lerr)
	}
}

// datasetKey reads "namespace/name" from PathPrefix + "namespace/name".
func (w *Webhook) datasetKey(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, w.cfg.PathPrefix)
	if !ok {
		return "", false
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return ns + "/" + name, true
}

// presentedToken returns the token of the Authorization header or, without the header, of the query
// string, and whether it came from the query string.
func presentedToken(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		if scheme, tok, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok), false
		}
		return "", false
	}
	tok := r.URL.Query().Get("token")
	return tok, tok != ""
}

// tokensEqual compares in time independent of where the tokens differ and of their lengths.
func tokensEqual(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}
