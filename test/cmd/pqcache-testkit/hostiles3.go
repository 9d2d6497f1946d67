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

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/test/hostiles3"
)

// newHostileS3Command is `pqcache-testkit hostile-s3`: the misbehaving S3 endpoint of package
// test/hostiles3 as a process, which the e2e suite runs as a pod.
func newHostileS3Command() *cobra.Command {
	var (
		listen   string
		interval time.Duration
		huge     int64
		rules    []string
		objects  int
	)
	cmd := &cobra.Command{
		Use:   "hostile-s3",
		Short: "Serve an S3 endpoint that misbehaves on demand (see docs/sync.md)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := hostiles3.New()
			s.Interval, s.HugeBytes = interval, huge
			if err := applyRules(s, rules, objects); err != nil {
				return err
			}
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
	f.StringArrayVar(&rules, "rule", nil, "BUCKET=BEHAVIOUR[:OP], set at start (repeatable): a pod serves several misbehaving buckets at once.")
	f.IntVar(&objects, "objects", 0, "Objects of 1 KiB to hold under data/ in every bucket given by --rule, so that GET behaviours have files to break.")
	return cmd
}

// applyRules sets each --rule and fills its bucket with objects objects.
func applyRules(s *hostiles3.Server, rules []string, objects int) error {
	for _, spec := range rules {
		bucket, rest, ok := strings.Cut(spec, "=")
		if !ok || bucket == "" {
			return fmt.Errorf("--rule %q: want BUCKET=BEHAVIOUR[:OP]", spec)
		}
		behaviour, op, _ := strings.Cut(rest, ":")
		rule, err := hostiles3.ParseRule(behaviour, op)
		if err != nil {
			return fmt.Errorf("--rule %q: %w", spec, err)
		}
		s.Set(bucket, rule)
		for i := range objects {
			s.Put(bucket, fmt.Sprintf("data/%04d.bin", i), bytes.Repeat([]byte{byte(i)}, 1024))
		}
	}
	return nil
}
