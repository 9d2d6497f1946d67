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

// Command pqcache-testkit holds the servers and probes pqcache's tests run as processes and pods, kept
// out of the shipped pqcache binary: hostile-s3 (an S3 endpoint that misbehaves on demand), marks and
// read-check (what readers of a refreshing Dataset see), lag (the freshness an event-driven refresh
// gives), and s3-check (what an S3 reader configured only by the AWS environment gets). The local
// cluster loads it as the image pqcache.local/pqcache-testkit:dev (hack/image-rootfs-testkit.sh); the
// event benchmark builds it into bin/.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "pqcache-testkit",
		Short:         "Servers and probes for pqcache's tests",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newHostileS3Command(), newMarksCommand(), newReadCheckCommand(), newLagCommand(), newS3CheckCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "pqcache-testkit:", err)
		os.Exit(1)
	}
}
