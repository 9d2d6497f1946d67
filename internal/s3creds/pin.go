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

package s3creds

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// pinPrefix begins a pin token: a reader sends it as its session token (AWS_SESSION_TOKEN, which
// every SDK signs as X-Amz-Security-Token).
const pinPrefix = "pqcache-pin/v1"

// MaxPinDatasets bounds how many Datasets one token pins.
const MaxPinDatasets = 16

// Pin is what a session token asks of the endpoint: the session whose generations a reader shares
// (a query, a Job, a BenchRun), and, for some Datasets, the generation to read.
type Pin struct {
	// Session names the session; empty means the reader's address does (each pod its own session).
	Session string
	// Generations maps a Dataset's name to the generation its reads must come from.
	Generations map[string]int64
}

var sessionName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParsePin reads "pqcache-pin/v1[;s=SESSION][;g=DATASET:N[,DATASET:N...]]". An empty token is the
// zero Pin. Anything else is refused with why: a real AWS session token sent by mistake must not be
// ignored.
func ParsePin(token string) (Pin, error) {
	var p Pin
	if token == "" {
		return p, nil
	}
	fields := strings.Split(token, ";")
	if fields[0] != pinPrefix || len(token) > 4096 {
		return p, errors.New(`the session token is not a pqcache pin ("pqcache-pin/v1;s=SESSION;g=DATASET:GENERATION"); unset AWS_SESSION_TOKEN to read without one`)
	}
	for _, f := range fields[1:] {
		name, value, _ := strings.Cut(f, "=")
		switch {
		case name == "s" && p.Session == "" && sessionName.MatchString(value):
			p.Session = value
		case name == "g" && p.Generations == nil:
			gens, err := parseGenerations(value)
			if err != nil {
				return Pin{}, err
			}
			p.Generations = gens
		default:
			return Pin{}, fmt.Errorf("the pin's field %q is not s=SESSION (letters, digits, '.', '_', '-', at most 64) or g=DATASET:GENERATION, once each", f)
		}
	}
	return p, nil
}

func parseGenerations(value string) (map[string]int64, error) {
	parts := strings.Split(value, ",")
	if len(parts) > MaxPinDatasets {
		return nil, fmt.Errorf("the pin names %d Datasets, at most %d", len(parts), MaxPinDatasets)
	}
	gens := make(map[string]int64, len(parts))
	for _, part := range parts {
		ds, n, _ := strings.Cut(part, ":")
		g, err := strconv.ParseInt(n, 10, 64)
		if len(validation.IsDNS1123Subdomain(ds)) > 0 || err != nil || g <= 0 || strconv.FormatInt(g, 10) != n {
			return nil, fmt.Errorf("the pin's %q is not DATASET:GENERATION (a Dataset's name and a generation from 1)", part)
		}
		if _, dup := gens[ds]; dup {
			return nil, fmt.Errorf("the pin names Dataset %s twice", ds)
		}
		gens[ds] = g
	}
	return gens, nil
}

// String writes the token ParsePin reads.
func (p Pin) String() string {
	s := pinPrefix
	if p.Session != "" {
		s += ";s=" + p.Session
	}
	if len(p.Generations) > 0 {
		var parts []string
		for _, ds := range slices.Sorted(maps.Keys(p.Generations)) {
			parts = append(parts, ds+":"+strconv.FormatInt(p.Generations[ds], 10))
		}
		s += ";g=" + strings.Join(parts, ",")
	}
	return s
}
