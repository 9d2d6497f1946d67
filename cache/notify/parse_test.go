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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// awsRecord is an S3 event record as AWS sends it to SQS, SNS and Lambda: the key URL-encoded, the
// ETag bare, eventTime with milliseconds.
const awsRecord = `{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"eu-west-1",
 "eventTime":"2026-01-02T03:04:05.678Z","eventName":"ObjectCreated:Put",
 "userIdentity":{"principalId":"AWS:AIDAEXAMPLE"},"requestParameters":{"sourceIPAddress":"10.0.0.1"},
 "responseElements":{"x-amz-request-id":"C3D13FE58DE4C810","x-amz-id-2":"FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD"},
 "s3":{"s3SchemaVersion":"1.0","configurationId":"pqcache","bucket":{"name":"lake","ownerIdentity":{"principalId":"A3NL1KOZZKExample"},"arn":"arn:aws:s3:::lake"},
  "object":{"key":"tpch/lineitem/dt%3D2026-01-02/red+flower+%2B1.parquet","size":1024,"eTag":"d41d8cd98f00b204e9800998ecf8427e","versionId":"096fKKXTRTtl3on89fVO.nfljtsv6qko","sequencer":"0055AED6DCD90281E5"}}}`

// versitygwBody is what versitygw v1.8.0 posted to --event-webhook-url for a PUT of the key
// `dt=2024-01-01/a b+c%é.parquet` (captured from the real server): the key raw, the ETag quoted, the
// event name with an "s3:" prefix, the sequencer a process-wide counter.
const versitygwBody = `{"Records":[{"eventVersion":"2.2","eventSource":"aws:s3","awsRegion":"us-east-1","eventTime":"2026-12-02T18:20:01Z","eventName":"s3:ObjectCreated:Put","userIdentity":{"PrincipalId":"ak"},"requestParameters":{"sourceIPAddress":"127.0.0.1"},"responseElements":{"x-amz-request-id":"","x-amz-id-2":""},"s3":{"s3SchemaVersion":"1.0","configurationId":"webhook-global","bucket":{"name":"bucket1","ownerIdentity":{"PrincipalId":"ak"},"arn":"arn:aws:s3:::/bucket1/dt=2024-01-01/a b+c%é.parquet"},"object":{"key":"dt=2024-01-01/a b+c%é.parquet","size":6,"eTag":"\"b1946ac92492d2347c6235b4d2611184\"","versionId":null,"sequencer":"1"}},"glacierEventData":{"restoreEventData":{"lifecycleRestorationExpiryTime":"","lifecycleRestoreStorageClass":""}}}]}`

func records(recs ...string) string {
	out := `{"Records":[`
	for i, r := range recs {
		if i > 0 {
			out += ","
		}
		out += r
	}
	return out + "]}"
}

// record builds a minimal record of the given event name, key and sequencer.
func rec(source, name, key, seq string) string {
	b, _ := json.Marshal(map[string]any{
		"eventSource": source, "eventName": name, "eventTime": "2026-01-02T03:04:05Z",
		"s3": map[string]any{"configurationId": "cfg", "bucket": map[string]any{"name": "lake"},
			"object": map[string]any{"key": key, "size": 7, "eTag": "abc", "sequencer": seq}},
	})
	return string(b)
}

func snsWrap(inner string) string {
	b, _ := json.Marshal(map[string]any{
		"Type": "Notification", "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
		"TopicArn": "arn:aws:sns:eu-west-1:123456789012:lake-events", "Subject": "Amazon S3 Notification",
		"Message": inner, "Timestamp": "2026-01-02T03:04:06.000Z", "SignatureVersion": "1",
		"Signature": "EXAMPLE", "SigningCertURL": "https://sns.example/cert.pem", "UnsubscribeURL": "https://sns.example/unsub",
	})
	return string(b)
}

const eventBridgeCreated = `{"version":"0","id":"17793124-05d4-b198-2fde-7ededc63b103","detail-type":"Object Created",
 "source":"aws.s3","account":"111122223333","time":"2026-01-02T03:04:05Z","region":"ca-central-1",
 "resources":["arn:aws:s3:::lake"],
 "detail":{"version":"0","bucket":{"name":"lake"},"object":{"key":"tpch/orders/part 1.parquet","size":5,
  "etag":"b1946ac92492d2347c6235b4d2611184","version-id":"IYV3p45BT0ac8hjHg1houSdS1a.Mro8e","sequencer":"617f08299329d189"},
  "request-id":"N4N7GDK58NMKJ12R","requester":"123456789012","source-ip-address":"1.2.3.4","reason":"PutObject"}}`

const eventBridgeDeleted = `{"version":"0","id":"2ee9cc15-d022-99ea-1fb8-1b1bac4850f9","detail-type":"Object Deleted",
 "source":"aws.s3","account":"111122223333","time":"2026-01-02T03:04:09Z","region":"ca-central-1",
 "resources":["arn:aws:s3:::lake"],
 "detail":{"version":"0","bucket":{"name":"lake"},"object":{"key":"tpch/orders/part 1.parquet","sequencer":"617f0837b476e463"},
  "request-id":"0BH729840619AG5K","requester":"123456789012","source-ip-address":"1.2.3.4","reason":"DeleteObject","deletion-type":"Permanently Deleted"}}`

const eventBridgeTags = `{"version":"0","detail-type":"Object Tags Added","source":"aws.s3","time":"2026-01-02T03:04:05Z",
 "detail":{"bucket":{"name":"lake"},"object":{"key":"tpch/orders/part 1.parquet"}}}`

const awsTestEvent = `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-01-02T03:04:05.089Z","Bucket":"lake","RequestId":"5582815E1AEA5ADF","HostId":"8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE"}`

func TestParse(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		body string
		keys KeyEncoding
		want Message
	}{{
		name: "S3 to SQS: key URL-decoded, '+' is a space, ETag quoted",
		body: records(awsRecord),
		want: Message{Changes: []Change{{
			Bucket: "lake", Key: "tpch/lineitem/dt=2026-01-02/red flower +1.parquet", Size: 1024,
			ETag: `"d41d8cd98f00b204e9800998ecf8427e"`, Sequencer: "0055AED6DCD90281E5",
			EventTime: time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC), Event: "ObjectCreated:Put",
		}}},
	}, {
		name: "removals carry no size or ETag; lifecycle expirations are removals; other events are ignored",
		body: records(
			rec("aws:s3", "ObjectRemoved:Delete", "a/x", "0A"),
			rec("aws:s3", "ObjectRemoved:DeleteMarkerCreated", "a/y", "0B"),
			rec("aws:s3", "LifecycleExpiration:Delete", "a/z", "0C"),
			rec("aws:s3", "ObjectTagging:Put", "a/x", "0D"),
			rec("aws:s3", "ObjectRestore:Completed", "a/x", "0E"),
			rec("aws:s3", "ObjectCreated:Put", "", "0F"),
			rec("aws:sqs", "ObjectCreated:Put", "a/x", "10"),
		),
		want: Message{Ignored: 4, Changes: []Change{
			{Bucket: "lake", Key: "a/x", Removed: true, Sequencer: "0A", EventTime: t0, Event: "ObjectRemoved:Delete"},
			{Bucket: "lake", Key: "a/y", Removed: true, Sequencer: "0B", EventTime: t0, Event: "ObjectRemoved:DeleteMarkerCreated"},
			{Bucket: "lake", Key: "a/z", Removed: true, Sequencer: "0C", EventTime: t0, Event: "LifecycleExpiration:Delete"},
		}},
	}, {
		name: "SNS-wrapped records",
		body: snsWrap(records(rec("aws:s3", "ObjectCreated:CompleteMultipartUpload", "a/b+c", "01"))),
		want: Message{Changes: []Change{{Bucket: "lake", Key: "a/b c", Size: 7, ETag: `"abc"`, Sequencer: "01", EventTime: t0, Event: "ObjectCreated:CompleteMultipartUpload"}}},
	}, {
		name: "SNS-wrapped test event",
		body: snsWrap(awsTestEvent),
		want: Message{Test: true},
	}, {
		name: "SNS subscription confirmation is a test message, never fetched",
		body: `{"Type":"SubscriptionConfirmation","MessageId":"1","Token":"t","TopicArn":"arn:aws:sns:eu-west-1:1:t","Message":"You have chosen to subscribe","SubscribeURL":"https://sns.example/confirm"}`,
		want: Message{Test: true},
	}, {
		name: "S3 test event",
		body: awsTestEvent,
		want: Message{Test: true},
	}, {
		name: "versitygw start-up test event",
		body: `{"Bucket":"Test-Bucket","Event":"s3:TestEvent","Service":"S3","Time":"2026-12-02T18:19:27Z"}`,
		want: Message{Test: true},
	}, {
		name: "EventBridge created: key taken as is",
		body: eventBridgeCreated,
		want: Message{Changes: []Change{{Bucket: "lake", Key: "tpch/orders/part 1.parquet", Size: 5, ETag: `"b1946ac92492d2347c6235b4d2611184"`, Sequencer: "617f08299329d189", EventTime: t0, Event: "Object Created PutObject"}}},
	}, {
		name: "EventBridge deleted",
		body: eventBridgeDeleted,
		want: Message{Changes: []Change{{Bucket: "lake", Key: "tpch/orders/part 1.parquet", Removed: true, Sequencer: "617f0837b476e463", EventTime: t0.Add(4 * time.Second), Event: "Object Deleted DeleteObject"}}},
	}, {
		name: "EventBridge through SNS",
		body: snsWrap(eventBridgeCreated),
		want: Message{Changes: []Change{{Bucket: "lake", Key: "tpch/orders/part 1.parquet", Size: 5, ETag: `"b1946ac92492d2347c6235b4d2611184"`, Sequencer: "617f08299329d189", EventTime: t0, Event: "Object Created PutObject"}}},
	}, {
		name: "EventBridge events that change no bytes are ignored",
		body: eventBridgeTags,
		want: Message{Ignored: 1},
	}, {
		name: "versitygw: raw key kept, quoted ETag kept, s3: prefix dropped",
		body: versitygwBody,
		want: Message{Changes: []Change{{Bucket: "bucket1", Key: "dt=2024-01-01/a b+c%é.parquet", Size: 6, ETag: `"b1946ac92492d2347c6235b4d2611184"`, Sequencer: "1", EventTime: time.Date(2026, 12, 2, 18, 20, 1, 0, time.UTC), Event: "ObjectCreated:Put"}}},
	}, {
		name: "versitygw: '+' is a plus",
		body: strings.ReplaceAll(versitygwBody, "a b+c%é", "a+b"),
		want: Message{Changes: []Change{{Bucket: "bucket1", Key: "dt=2024-01-01/a+b.parquet", Size: 6, ETag: `"b1946ac92492d2347c6235b4d2611184"`, Sequencer: "1", EventTime: time.Date(2026, 12, 2, 18, 20, 1, 0, time.UTC), Event: "ObjectCreated:Put"}}},
	}, {
		name: "versitygw with KeysURLEncoded decodes anyway",
		body: strings.ReplaceAll(versitygwBody, "a b+c%é", "a+b"),
		keys: KeysURLEncoded,
		want: Message{Changes: []Change{{Bucket: "bucket1", Key: "dt=2024-01-01/a b.parquet", Size: 6, ETag: `"b1946ac92492d2347c6235b4d2611184"`, Sequencer: "1", EventTime: time.Date(2026, 12, 2, 18, 20, 1, 0, time.UTC), Event: "ObjectCreated:Put"}}},
	}, {
		name: "KeysRaw leaves an AWS key encoded",
		body: records(rec("aws:s3", "ObjectCreated:Put", "a/b+c%3D", "01")),
		keys: KeysRaw,
		want: Message{Changes: []Change{{Bucket: "lake", Key: "a/b+c%3D", Size: 7, ETag: `"abc"`, Sequencer: "01", EventTime: t0, Event: "ObjectCreated:Put"}}},
	}, {
		name: "MinIO encodes slashes too",
		body: records(rec("minio:s3", "s3:ObjectCreated:Put", "users%2FABC+1", "")),
		want: Message{Changes: []Change{{Bucket: "lake", Key: "users/ABC 1", Size: 7, ETag: `"abc"`, EventTime: t0, Event: "ObjectCreated:Put"}}},
	}, {
		name: "Ceph RGW sends raw keys",
		body: records(rec("ceph:s3", "ObjectCreated:Put", "a/b+c", "01")),
		want: Message{Changes: []Change{{Bucket: "lake", Key: "a/b+c", Size: 7, ETag: `"abc"`, Sequencer: "01", EventTime: t0, Event: "ObjectCreated:Put"}}},
	}, {
		name: "a key that does not URL-decode was not encoded",
		body: records(rec("aws:s3", "ObjectCreated:Put", "a/100%", "01")),
		want: Message{Changes: []Change{{Bucket: "lake", Key: "a/100%", Size: 7, ETag: `"abc"`, Sequencer: "01", EventTime: t0, Event: "ObjectCreated:Put"}}},
	}, {
		name: "a JSON array of envelopes",
		body: "[" + records(rec("aws:s3", "ObjectCreated:Put", "a/1", "01")) + "," + snsWrap(records(rec("aws:s3", "ObjectRemoved:Delete", "a/2", "02"))) + "]",
		want: Message{Changes: []Change{
			{Bucket: "lake", Key: "a/1", Size: 7, ETag: `"abc"`, Sequencer: "01", EventTime: t0, Event: "ObjectCreated:Put"},
			{Bucket: "lake", Key: "a/2", Removed: true, Sequencer: "02", EventTime: t0, Event: "ObjectRemoved:Delete"},
		}},
	}, {
		name: "size as a string, no event time",
		body: `{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":"k","size":"42"}}}]}`,
		want: Message{Changes: []Change{{Bucket: "lake", Key: "k", Size: 42, Event: "ObjectCreated:Put"}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.body), tt.keys)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, body := range []string{`{"foo":1}`, `{"Type":"Notification"}`, `[{"foo":1}]`, `"Records"`} {
		if _, err := Parse([]byte(body), KeysAuto); !errors.Is(err, ErrUnrecognized) {
			t.Errorf("Parse(%s) = %v, want ErrUnrecognized", body, err)
		}
	}
	for _, body := range []string{``, `{"Records":`, `{"Type":"Notification","Message":"{not json"}`, `not json`} {
		_, err := Parse([]byte(body), KeysAuto)
		if err == nil || errors.Is(err, ErrUnrecognized) {
			t.Errorf("Parse(%q) = %v, want a JSON syntax error", body, err)
		}
	}
	deep := records(rec("aws:s3", "ObjectCreated:Put", "k", "01"))
	for range 5 {
		deep = snsWrap(deep)
	}
	if _, err := Parse([]byte(deep), KeysAuto); !errors.Is(err, ErrUnrecognized) {
		t.Errorf("Parse of 5 nested SNS envelopes = %v, want ErrUnrecognized", err)
	}
}

func TestCompareSequencers(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"0055AED6DCD90281E5", "0055AED6DCD90281E5", 0},
		{"0055AED6DCD90281E5", "0055AED6DCD90281E6", -1},
		{"0055AED6DCD90281E6", "0055AED6DCD90281E5", 1},
		// Different lengths compare after left-padding: "FF" is 0x00FF, less than 0x0100.
		{"FF", "0100", -1},
		{"0100", "FF", 1},
		// A longer string is not later by itself.
		{"00000001", "2", -1},
		{"0A", "A", 0},
		// Lexicographic on hex digits, case ignored: "9" < "A" and "a" == "A".
		{"9", "A", -1},
		{"a", "A", 0},
		{"617f0837b476e463", "617f08299329d189", 1},
		// versitygw's counter, formatted %X.
		{"F", "10", -1},
		{"", "", 0},
		{"", "1", -1},
	}
	for _, tt := range tests {
		if got := CompareSequencers(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareSequencers(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestSupersedes(t *testing.T) {
	older := Change{Key: "k", Sequencer: "0A"}
	newer := Change{Key: "k", Sequencer: "0B"}
	noSeq := Change{Key: "k"}
	switch {
	case !newer.supersedes(older):
		t.Error("a higher sequencer must win")
	case older.supersedes(newer):
		t.Error("an older sequencer arriving later must not win")
	case !older.supersedes(older):
		t.Error("a duplicate (equal sequencer) keeps the later event")
	case !noSeq.supersedes(newer) || !newer.supersedes(noSeq):
		t.Error("without sequencers the later arrival wins")
	}
}
