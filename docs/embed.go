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

// Package docs carries the parts of pqcache's documentation that its tools print: `kubectl pqcache
// why` shows the troubleshooting entry of a condition's reason, from the same page a reader opens.
package docs

import (
	_ "embed"
	"strings"
)

//go:embed troubleshooting.md
var troubleshooting string

// Trouble is one row of troubleshooting.md's table of reasons.
type Trouble struct {
	Reason, On, Meaning, Fix string
}

// Troubleshooting returns the entry for a condition reason, and whether there is one.
func Troubleshooting(reason string) (Trouble, bool) {
	for _, line := range strings.Split(troubleshooting, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) == 4 && strings.Trim(cells[0], "`") == reason {
			return Trouble{Reason: reason, On: cells[1], Meaning: cells[2], Fix: cells[3]}, true
		}
	}
	return Trouble{}, false
}
