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

package s3serve

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// RefusalLogInterval is how often, at most, refused requests are summed up in an Info line.
const RefusalLogInterval = time.Minute

// RefusalLog counts the requests refused since its last Info line. An S3 port is open to a network
// and a refusal costs the sender nothing, so one line per refusal would let anyone fill the log.
// Its zero value is ready.
type RefusalLog struct {
	mu      sync.Mutex
	last    time.Time
	pending int
}

// Refused logs one refused request at debug level, and at Info a count of the refusals since the last
// such line, at most once per RefusalLogInterval. What says what was refused ("peer requests").
func (l *RefusalLog) Refused(log *slog.Logger, r *http.Request, err error, what string) {
	log.Debug("Refused a request", "what", what, "remote", r.RemoteAddr, "error", err)
	l.mu.Lock()
	l.pending++
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < RefusalLogInterval {
		l.mu.Unlock()
		return
	}
	n := l.pending
	l.last, l.pending = now, 0
	l.mu.Unlock()
	log.Info("Refused "+what+" whose sender could not be verified or may not read", "refused", n,
		"lastRemote", r.RemoteAddr, "lastError", err, "nextSummaryIn", RefusalLogInterval)
}
