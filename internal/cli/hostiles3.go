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

package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/test/hostiles3"
)

// newHostileS3Command is `pqcache hostile-s3`, hidden: the misbehaving S3 endpoint of package
// test/hostiles3 as a process, so that the e2e suite runs it as a pod from the image it already has.
// It is a test tool, not part of the product.
func newHostileS3Command() *cobra.Command {
	var (
		listen   string
		interval time.Duration
		huge     int64
	)
	cmd := &cobra.Command{
		Use:    "hostile-s3",
		Short:  "Serve an S3 endpoint that misbehaves on demand (tests only; see docs/sync.md)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := hostiles3.New()
			s.Interval, s.HugeBytes = interval, huge
			if err := s.Listen(listen); err != nil {
				return err
			}
			defer s.Close()
			_, _ = fmt.Fprintln(cmd.ErrOrStderr(), "hostile-s3: serving on", s.URL())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:9000", "Address to serve on (in a pod, :9000).")
	f.DurationVar(&interval, "interval", time.Second, "Pause between the bytes of a slow-body answer.")
	f.Int64Var(&huge, "huge-bytes", 100<<20, "Size of a huge-document listing page, in bytes.")
	return cmd
}
