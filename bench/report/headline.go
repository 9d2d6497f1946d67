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

package report

import (
	"fmt"
	"html/template"
	"math"

	"github.com/pqcache/pqcache/api/wire"
)

// This file is the report's answer, which opens the page: per engine, which input path won and by
// how much, what one run costs on each path, and after how many runs the cache pays for itself; and
// one chart of every engine's geometric mean per input path.

// headline is the answer for one engine (on one configuration, when the run had several).
type headline struct {
	// Engine names the engine, with its configuration when there are several: "polars on 2cpu-4gi".
	Engine string
	// Verdict compares its input paths over the queries that succeeded on all of them (fastest
	// first); one mean when it read one input.
	Verdict verdict
	// Runs are its results by input.
	Runs map[string]*wire.BenchResult
	// Color is its bars' colour: the engine's own, unless the engine ran on several configurations.
	Color string
}

// headlines are the answers, engine by engine in the report's order.
func (c comparison) headlines() []headline {
	var out []headline
	for _, e := range c.Engines {
		for _, cfg := range c.Configs {
			h := headline{Engine: e, Runs: map[string]*wire.BenchResult{}, Color: c.engineColor(e)}
			if cfg != "" && len(c.Configs) > 1 {
				h.Engine += " on " + cfg
				h.Color = palette[len(out)%len(palette)]
			}
			var inputs []string
			for _, g := range c.Groups {
				if g.Config == cfg && g.Runs[e] != nil {
					h.Runs[g.Input] = g.Runs[e]
					inputs = append(inputs, g.Input)
				}
			}
			if len(inputs) == 0 {
				continue
			}
			h.Verdict = judge(h.Engine, inputs, h.Runs)
			out = append(out, h)
		}
	}
	return out
}

// Answer says which input won and by how much, or that they are within noise: "volume is 3.1x faster
// than s3; geometric means over 21 queries: volume 120 ms (115–126 ms), s3 372 ms (360–390 ms)."
func (h headline) Answer() string {
	v := h.Verdict
	if v.Queries == 0 {
		return "no query succeeded on every input path: nothing to compare."
	}
	over := fmt.Sprintf("geometric mean%s over %d %s: %s", plural(len(v.Means), "", "s"), v.Queries, plural(v.Queries, "query", "queries"), v.meansText())
	if len(v.Means) == 1 {
		return fmt.Sprintf("read %s only; %s.", v.Means[0].Name, over)
	}
	return fmt.Sprintf("%s; %s.", v.claim(), over)
}

// Cost says what one run costs on each input path and when the cache pays for itself; "" when the
// runs were not priced (a BenchRun prices them; `pqcache bench` alone does not).
func (h headline) Cost() string {
	var costs []string
	for _, m := range h.Verdict.Means {
		if r := h.Runs[m.Name]; r.CostMicros != nil {
			costs = append(costs, fmt.Sprintf("%s on %s", money(*r.CostMicros, r.Currency), m.Name))
		}
	}
	if len(costs) == 0 {
		return ""
	}
	s := "One run costs " + joinAnd(costs) + "."
	vol, s3 := h.Runs["volume"], h.Runs["s3"]
	switch {
	case vol == nil || s3 == nil || vol.CostMicros == nil || s3.CostMicros == nil:
	case vol.BreakEvenRuns != nil:
		s += fmt.Sprintf(" The cache pays for itself after %d %s.", *vol.BreakEvenRuns, plural(int(*vol.BreakEvenRuns), "run", "runs"))
	case *vol.CostMicros >= *s3.CostMicros:
		s += " A run on the volume costs no less than on s3: the cache buys speed, not savings."
	}
	return s + h.cacheCost()
}

// money writes an amount in millionths as a price: two significant digits below one unit ($0.00071),
// cents above ($3.20).
func money(micros int64, currency string) string {
	v := float64(micros) / 1e6
	decimals := 2
	if v > 0 && v < 1 {
		decimals = max(2, 1-int(math.Floor(math.Log10(v))))
	}
	symbol := map[string]string{"USD": "$", "EUR": "€", "GBP": "£", "": ""}[currency]
	if _, known := map[string]bool{"USD": true, "EUR": true, "GBP": true, "": true}[currency]; !known {
		symbol = currency + " "
	}
	return fmt.Sprintf("%s%.*f", symbol, decimals, v)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// headlineChart draws every engine's geometric mean per input path: one group per input, one bar per
// engine, the means of each engine's verdict (over the queries that succeeded on all its inputs),
// each with a whisker over its range when known.
func (c comparison) headlineChart(hs []headline) template.HTML {
	var series []barSeries
	for _, h := range hs {
		s := barSeries{Label: h.Engine, Color: h.Color}
		for _, input := range c.Inputs {
			cell := barCell{}
			for _, m := range h.Verdict.Means {
				if m.Name == input {
					cell = barCell{Value: m.Millis, OK: true, Lo: m.Lo, Hi: m.Hi}
				}
			}
			s.Cells = append(s.Cells, cell)
		}
		series = append(series, s)
	}
	return drawBars("Geometric mean per input path and engine", "ms", c.Inputs, series)
}
