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

package plugin

import (
	"fmt"
	"slices"
	"strings"
)

// resourceKind is how a user may spell one of pqcache's kinds on kubectl's command line: its
// singular and plural names, its short name, and each of those qualified with the API group.
type resourceKind struct {
	singular, plural, short string
}

var (
	datasetKind  = resourceKind{singular: "dataset", plural: "datasets", short: "pqds"}
	benchRunKind = resourceKind{singular: "benchrun", plural: "benchruns", short: "pqbr"}
)

const apiGroup = "data.pqcache.dev"

// names lists every spelling kubectl accepts for the kind, in the order the error message gives them.
func (k resourceKind) names() []string {
	var all []string
	for _, n := range []string{k.singular, k.plural, k.short} {
		all = append(all, n, n+"."+apiGroup)
	}
	return all
}

// objectName reads a command's object argument as kubectl does: NAME, or TYPE/NAME where TYPE is
// one of the kind's names (case-insensitive, as kubectl matches resources). Another TYPE is refused
// with the spellings that would do, rather than sent to the API server as a name with a '/'.
func objectName(arg string, k resourceKind) (string, error) {
	typ, name, found := strings.Cut(arg, "/")
	if !found {
		return arg, nil
	}
	if name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("%q: give NAME or %s/NAME", arg, k.singular)
	}
	if !slices.Contains(k.names(), strings.ToLower(typ)) {
		return "", fmt.Errorf("%q names a %s; this command takes a %s (NAME, or TYPE/NAME with TYPE one of %s)",
			arg, typ, k.singular, strings.Join(k.names(), ", "))
	}
	return name, nil
}
