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
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds Parse what an SQS queue or a webhook poster can send: any bytes, in any of the
// three key encodings. Seeds are the formats of parse_test.go: AWS's record (SQS), versitygw's
// webhook body as captured from the real server, SNS envelopes, EventBridge events, S3's test event.
//
// Properties: Parse returns a message or an error, never both; every change names a bucket and a
// key, a removal carries no size or ETag, an ETag is quoted; and wrapping the body in an SNS
// envelope or a JSON array changes nothing (unless the wrapping passes the nesting limit).
func FuzzParse(f *testing.F) {
	for _, body := range []string{
		records(awsRecord),
		versitygwBody,
		records(rec("aws:s3", "ObjectRemoved:Delete", "a/x", "0A"), rec("aws:s3", "LifecycleExpiration:Delete", "a/z", "0C"),
			rec("aws:s3", "ObjectTagging:Put", "a/x", "0D"), rec("aws:sqs", "ObjectCreated:Put", "a/x", "10")),
		records(rec("ceph:s3", "ObjectCreated:Put", "a%2Fb+c", "01")),
		snsWrap(records(rec("aws:s3", "ObjectCreated:CompleteMultipartUpload", "a/b+c", "01"))),
		snsWrap(awsTestEvent),
		`{"Type":"SubscriptionConfirmation","MessageId":"1","Token":"t","TopicArn":"arn:aws:sns:eu-west-1:1:t","Message":"You have chosen to subscribe","SubscribeURL":"https://sns.example/confirm"}`,
		eventBridgeCreated,
		eventBridgeDeleted,
		eventBridgeTags,
		awsTestEvent,
		"[" + records(awsRecord) + "," + eventBridgeCreated + "]",
		`{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":"k","size":"42"}}}]}`,
		`{"foo":1}`, `"Records"`, `{"Type":"Notification","Message":"{not json"}`, `[[[[[[{}]]]]]]`,
	} {
		for _, keys := range []KeyEncoding{KeysAuto, KeysURLEncoded, KeysRaw} {
			f.Add([]byte(body), uint8(keys))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, k uint8) {
		keys := KeyEncoding(k % 3)
		m, err := Parse(body, keys)
		if err != nil {
			if !reflect.DeepEqual(m, Message{}) {
				t.Fatalf("an error (%v) and a message %+v", err, m)
			}
		} else {
			checkMessage(t, m)
		}
		sameThroughEnvelopes(t, body, keys, m, err)
	})
}

func checkMessage(t *testing.T, m Message) {
	t.Helper()
	if m.Ignored < 0 {
		t.Fatalf("ignored %d", m.Ignored)
	}
	for _, c := range m.Changes {
		switch {
		case c.Bucket == "" || c.Key == "":
			t.Fatalf("a change without a bucket or key: %+v", c)
		case c.Removed && (c.Size != 0 || c.ETag != ""):
			t.Fatalf("a removal with a size or ETag: %+v", c)
		case c.ETag != "" && !strings.HasPrefix(c.ETag, `"`):
			t.Fatalf("an unquoted ETag: %+v", c)
		case !c.EventTime.IsZero() && c.EventTime.Location().String() != "UTC":
			t.Fatalf("an event time not in UTC: %+v", c)
		}
	}
}

// sameThroughEnvelopes: the body inside an SNS notification, or alone in a JSON array, reads the
// same as the body alone.
func sameThroughEnvelopes(t *testing.T, body []byte, keys KeyEncoding, m Message, err error) {
	t.Helper()
	var wrapped [][]byte
	if json.Valid(body) { // one JSON value: alone in an array, it is one element
		wrapped = append(wrapped, append(append([]byte("["), body...), ']'))
	}
	if utf8.Valid(body) { // SNS carries the body as a JSON string, which holds UTF-8 only
		env, merr := json.Marshal(map[string]string{"Type": "Notification", "Message": string(body)})
		if merr != nil {
			t.Fatal(merr)
		}
		wrapped = append(wrapped, env)
	}
	for _, w := range wrapped {
		wm, werr := Parse(w, keys)
		if werr != nil && strings.Contains(werr.Error(), "nested deeper") {
			continue
		}
		if (werr == nil) != (err == nil) || !reflect.DeepEqual(wm, m) {
			t.Fatalf("%s reads as %+v, %v; alone: %+v, %v", w, wm, werr, m, err)
		}
		if err != nil && errors.Is(err, ErrUnrecognized) != errors.Is(werr, ErrUnrecognized) {
			t.Fatalf("%s: %v; alone: %v", w, werr, err)
		}
	}
}
