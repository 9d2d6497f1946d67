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
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/pqcache/pqcache/test/mototest"
	"github.com/pqcache/pqcache/test/testfiles"
)

// The SQS source on AWS's own wiring, as moto's server emulates it: a bucket notification
// configuration sends S3's records to an SQS queue, read over the SDK's default protocol (AWS JSON).
// The s3:TestEvent that setting the configuration sends is recognised as a test; keys arrive
// URL-encoded ('/' as %2F, a space as '+') and are decoded; a multipart upload is a write with its
// size; every acknowledged message is deleted from the queue.
func TestSQSSourceOnMotosBucketNotifications(t *testing.T) {
	m := mototest.Start(t)
	const bucket = "lake"
	m.CreateBucket(t, bucket)
	queue := m.NotifyQueue(t, bucket, "lake-events")
	sink := newRecordingSink()
	// goaws's settings, but moto's credentials and the SDK's default protocol (AWS JSON).
	startSource(t, nil, queue, 5*time.Second, sink, func(c *SQSConfig) {
		c.AccessKeyID, c.SecretAccessKey, c.Region, c.ClientOptions = mototest.AccessKey, mototest.SecretKey, mototest.Region, nil
	})

	spaced := "tpch/r=a b+c/part 0+1.parquet"
	m.PutObject(t, bucket, spaced, []byte("0123456789"), nil)
	m.PutMultipart(t, bucket, "tpch/big.parquet", [][]byte{testfiles.Random(5<<20, 1), testfiles.Random(100, 2)})
	m.DeleteObject(t, bucket, spaced)

	seen := map[string]Change{}
	tests := 0
	deadline := time.Now().Add(30 * time.Second)
	for done := 0; (len(seen) < 3 || tests == 0) && time.Now().Before(deadline); done++ {
		d := sink.waitDeliveries(t, done+1, time.Until(deadline))[done]
		if d.lost {
			t.Fatalf("moto's message was not understood (delivered as lost)")
		}
		if d.msg.Test {
			tests++
		}
		for _, c := range d.msg.Changes {
			seen[c.Key+" removed="+strconv.FormatBool(c.Removed)] = c
		}
		d.ack(true)
	}
	if tests != 1 {
		t.Errorf("%d test events, want the one s3:TestEvent that setting the configuration sends", tests)
	}
	if c, ok := seen[spaced+" removed=false"]; !ok || c.Size != 10 || c.ETag == "" {
		t.Errorf("the write of %q: %+v (found %v); want its decoded key, size 10 and ETag", spaced, c, ok)
	}
	if _, ok := seen[spaced+" removed=true"]; !ok {
		t.Errorf("the removal of %q was not delivered; got %v", spaced, seen)
	}
	if c, ok := seen["tpch/big.parquet removed=false"]; !ok || c.Size != 5<<20+100 {
		t.Errorf("the multipart write: %+v (found %v), want its whole size", c, ok)
	}
	eventually(t, 15*time.Second, "every acknowledged message deleted", func() bool { return motoQueueDepth(t, m, queue) == 0 })
}

// motoQueueDepth is how many messages the queue holds, visible or in flight.
func motoQueueDepth(t *testing.T, m *mototest.Server, queueURL string) int {
	t.Helper()
	out, err := m.SQS().GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		v, _ := strconv.Atoi(out.Attributes[string(k)])
		n += v
	}
	return n
}
