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
	"strings"
	"time"

	"github.com/pqcache/pqcache/api/wire"
)

// sparkTable lists what each Spark run's driver and executors used, when one of the results is a
// Spark run's: the executors, the driver's and the largest executor's peak memory, their sum, the
// bytes the executors read from the bucket (a lower bound on s3), and the compute the cost is
// charged on. The driver's own peak is the result's cgroup peak.
func sparkTable(results []*wire.BenchResult) template.HTML {
	var b strings.Builder
	for _, s := range seriesOf(results) {
		sp := s.Result.Spark
		if sp == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("<h2>Spark: driver and executors</h2>\n<table><tr><th>run</th><th>executors</th><th>driver peak</th>" +
				"<th>largest executor peak</th><th>peaks summed</th><th>read from the bucket (lower bound)</th>" +
				"<th>executor time</th><th>core-seconds</th><th>GiB-seconds</th></tr>\n")
		}
		largest := int64(0)
		if len(sp.ExecutorPeakBytes) > 0 {
			largest = sp.ExecutorPeakBytes[0]
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%d</td></tr>\n",
			template.HTMLEscapeString(s.Label), sp.Executors, wire.Bytes(s.Result.CgroupPeakBytes), wire.Bytes(largest),
			wire.Bytes(sp.PeakSum(s.Result.CgroupPeakBytes)), wire.Bytes(sp.S3ReadBytes),
			wire.Duration(time.Duration(sp.ExecutorMillis)*time.Millisecond), sp.CoreSeconds, sp.GiBSeconds)
	}
	if b.Len() == 0 {
		return ""
	}
	b.WriteString("</table>\n")
	return template.HTML(b.String()) //nolint:gosec // G203: the markup is this function's own; the one text in it, the run's label, is escaped
}
