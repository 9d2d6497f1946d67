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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Message is what one notification says: the body of one SQS message or of one webhook POST.
type Message struct {
	// Changes are the object writes and removals it reports, in the order it lists them.
	Changes []Change
	// Ignored counts records that are not a write or a removal (tagging, ACL, restore, replication
	// and other event types) or that name no object.
	Ignored int
	// Test is true for a message that only checks the wiring: S3's s3:TestEvent, versitygw's start-up
	// test event, an SNS subscription or unsubscription confirmation. It carries no change.
	Test bool
}

// KeyEncoding says how a notification spells object keys.
type KeyEncoding int

const (
	// KeysAuto decodes keys the way each sender writes them: AWS S3 and MinIO records URL-encode
	// keys (a space is '+'); versitygw and Ceph RGW records, and EventBridge events, carry the raw
	// key.
	KeysAuto KeyEncoding = iota
	// KeysURLEncoded always URL-decodes record keys.
	KeysURLEncoded
	// KeysRaw never decodes keys.
	KeysRaw
)

// ErrUnrecognized marks a body that is JSON but none of the notification formats Parse knows.
var ErrUnrecognized = errors.New("not an S3 event notification")

// maxNesting bounds how deep envelopes may nest (a JSON array of SNS notifications of records is 3).
const maxNesting = 4

// Parse reads one notification in any of the envelopes users meet: S3 records sent straight to SQS
// or to a webhook (`{"Records":[…]}`), the same wrapped by SNS (`{"Type":"Notification","Message":
// "<json>"}`), an EventBridge event (`"detail-type":"Object Created"`), S3's test event, and a JSON
// array of any of these. A test message is not an error; JSON that is none of these is
// ErrUnrecognized.
func Parse(body []byte, keys KeyEncoding) (Message, error) {
	var m Message
	if err := parseInto(&m, body, keys, 0); err != nil {
		return Message{}, err
	}
	return m, nil
}

// envelope has the top-level fields of every format Parse reads. Names that differ only in case
// between formats do not occur, so encoding/json's case-insensitive matching is harmless.
type envelope struct {
	Records []record `json:"Records"`

	// SNS.
	Type    string  `json:"Type"`
	Message *string `json:"Message"`

	// EventBridge.
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       string          `json:"time"`
	Detail     json.RawMessage `json:"detail"`

	// S3's test event: {"Service":"Amazon S3","Event":"s3:TestEvent",…}.
	Event string `json:"Event"`
}

type record struct {
	EventSource string `json:"eventSource"`
	EventTime   string `json:"eventTime"`
	EventName   string `json:"eventName"`
	S3          struct {
		ConfigurationID string `json:"configurationId"`
		Bucket          struct {
			Name string `json:"name"`
		} `json:"bucket"`
		Object struct {
			Key       string    `json:"key"`
			Size      flexInt64 `json:"size"`
			ETag      *string   `json:"eTag"`
			Sequencer string    `json:"sequencer"`
		} `json:"object"`
	} `json:"s3"`
}

type eventBridgeDetail struct {
	Bucket struct {
		Name string `json:"name"`
	} `json:"bucket"`
	Object struct {
		Key       string    `json:"key"`
		Size      flexInt64 `json:"size"`
		ETag      string    `json:"etag"`
		Sequencer string    `json:"sequencer"`
	} `json:"object"`
	Reason string `json:"reason"`
}

func parseInto(m *Message, body []byte, keys KeyEncoding, depth int) error {
	if depth > maxNesting {
		return fmt.Errorf("%w: envelopes nested deeper than %d", ErrUnrecognized, maxNesting)
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(body, &list); err != nil {
			return fmt.Errorf("parsing notification: %w", err)
		}
		for _, item := range list {
			if err := parseInto(m, item, keys, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) { // valid JSON of another shape
			return fmt.Errorf("%w: %w", ErrUnrecognized, err)
		}
		return fmt.Errorf("parsing notification: %w", err)
	}
	switch {
	case env.Records != nil:
		for _, r := range env.Records {
			c, ok := r.change(keys)
			if !ok {
				m.Ignored++
				continue
			}
			m.Changes = append(m.Changes, c)
		}
		return nil
	case env.Type == "Notification" && env.Message != nil:
		return parseInto(m, []byte(*env.Message), keys, depth+1)
	case env.Type == "SubscriptionConfirmation" || env.Type == "UnsubscribeConfirmation":
		// Confirming means fetching a URL the message names; pqcache never fetches URLs from
		// messages. The subscription is confirmed by whoever set it up.
		m.Test = true
		return nil
	case strings.HasSuffix(env.Event, "TestEvent"):
		m.Test = true
		return nil
	case env.DetailType != "" && env.Detail != nil:
		c, ok, err := eventBridgeChange(env, keys)
		if err != nil {
			return err
		}
		if !ok {
			m.Ignored++
			return nil
		}
		m.Changes = append(m.Changes, c)
		return nil
	}
	return ErrUnrecognized
}

// change turns one record into a Change; ok is false for records that are not a write or removal.
func (r record) change(keys KeyEncoding) (Change, bool) {
	if r.EventSource != "" && !strings.HasSuffix(r.EventSource, ":s3") {
		return Change{}, false
	}
	removed, ok := recordKind(r.EventName)
	if !ok || r.S3.Bucket.Name == "" || r.S3.Object.Key == "" {
		return Change{}, false
	}
	key := r.S3.Object.Key
	if decodeRecordKeys(keys, r) {
		// Query-style decoding: '+' is a space, %XX a byte. A key that does not decode (a stray '%')
		// was not encoded.
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
	}
	c := Change{
		Bucket:    r.S3.Bucket.Name,
		Key:       key,
		Removed:   removed,
		Sequencer: r.S3.Object.Sequencer,
		EventTime: parseTime(r.EventTime),
		Event:     strings.TrimPrefix(r.EventName, "s3:"),
	}
	if !removed {
		c.Size = int64(r.S3.Object.Size)
		if r.S3.Object.ETag != nil {
			c.ETag = quoteETag(*r.S3.Object.ETag)
		}
	}
	return c, true
}

// recordKind classifies a record's eventName, with or without the "s3:" prefix that MinIO and
// versitygw add.
func recordKind(name string) (removed, ok bool) {
	name = strings.TrimPrefix(name, "s3:")
	switch {
	case strings.HasPrefix(name, "ObjectCreated:"):
		return false, true
	case strings.HasPrefix(name, "ObjectRemoved:"), strings.HasPrefix(name, "LifecycleExpiration:"):
		return true, true
	}
	return false, false
}

// versitygwConfigurationIDs are the configurationId values versitygw v1.8.0 writes into every record
// (its notifications are global, not per bucket). versitygw does not URL-encode keys.
var versitygwConfigurationIDs = map[string]bool{
	"webhook-global": true, "kafka-global": true, "nats-global": true, "rabbitmq-global": true,
}

func decodeRecordKeys(keys KeyEncoding, r record) bool {
	switch keys {
	case KeysURLEncoded:
		return true
	case KeysRaw:
		return false
	}
	return r.EventSource != "ceph:s3" && !versitygwConfigurationIDs[r.S3.ConfigurationID]
}

func eventBridgeChange(env envelope, keys KeyEncoding) (Change, bool, error) {
	var removed bool
	switch env.DetailType {
	case "Object Created":
	case "Object Deleted":
		removed = true
	default:
		return Change{}, false, nil
	}
	var d eventBridgeDetail
	if err := json.Unmarshal(env.Detail, &d); err != nil {
		return Change{}, false, fmt.Errorf("parsing EventBridge detail: %w", err)
	}
	if d.Bucket.Name == "" || d.Object.Key == "" {
		return Change{}, false, nil
	}
	key := d.Object.Key
	if keys == KeysURLEncoded {
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
	}
	c := Change{
		Bucket:    d.Bucket.Name,
		Key:       key,
		Removed:   removed,
		Sequencer: d.Object.Sequencer,
		EventTime: parseTime(env.Time),
		Event:     strings.TrimSpace(env.DetailType + " " + d.Reason),
	}
	if !removed {
		c.Size = int64(d.Object.Size)
		c.ETag = quoteETag(d.Object.ETag)
	}
	return c, true, nil
}

// quoteETag writes an ETag the way S3's API returns it (and the manifest stores it): in double
// quotes. AWS events send it bare; versitygw sends it quoted.
func quoteETag(etag string) string {
	if etag == "" || strings.HasPrefix(etag, `"`) {
		return etag
	}
	return `"` + etag + `"`
}

// parseTime reads an ISO-8601 event time, with or without fractional seconds; anything else is the
// zero time (a missing time only costs the lag figure).
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// flexInt64 accepts a JSON number or a string holding one: stores disagree on the type of "size".
type flexInt64 int64

func (n *flexInt64) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// A size is a hint; a malformed one must not make the whole message unreadable.
		*n = 0
		return nil //nolint:nilerr // a malformed size reads as 0 (unknown), by design
	}
	*n = flexInt64(v)
	return nil
}
