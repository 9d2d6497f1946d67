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

package peer

import "testing"

// TestClientLimitCountsFollowersNotRequests: one follower's many parallel requests take one slot; a
// third follower waits for a slot, which frees when a follower's last request ends.
func TestClientLimitCountsFollowersNotRequests(t *testing.T) {
	var c clientLimit
	a1, ok1 := c.admit("10.0.0.1:40000", 2)
	a2, ok2 := c.admit("10.0.0.1:40001", 2)
	b1, ok3 := c.admit("10.0.0.2:40000", 2)
	if !ok1 || !ok2 || !ok3 {
		t.Fatal("two followers were not both admitted")
	}
	if _, ok := c.admit("10.0.0.3:40000", 2); ok {
		t.Fatal("a third follower was admitted beyond the limit of 2")
	}
	a1()
	if _, ok := c.admit("10.0.0.3:40000", 2); ok {
		t.Fatal("a follower with a request in flight lost its slot")
	}
	a2()
	c3, ok := c.admit("10.0.0.3:40000", 2)
	if !ok {
		t.Fatal("a freed slot was not given to the waiting follower")
	}
	b1()
	c3()
	if len(c.active) != 0 {
		t.Errorf("slots left after every request ended: %v", c.active)
	}
}

// TestParseRange: the forms the sync engine sends, and ranges past the end.
