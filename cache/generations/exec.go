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

package generations

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
)

// DataEnv is the environment variable Exec sets to the held generation's directory.
const DataEnv = "PQCACHE_DATA"

// Stdio is the standard streams a command run by Exec gets.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// Exec runs args on the generation l holds, with {data} in args and $PQCACHE_DATA its directory,
// forwarding SIGINT and SIGTERM. The child inherits the locked directory (as fd 3), so that the
// generation stays held while it runs even if this process is killed first. exited is true when the
// child ran and exited, with code its status (128 + the signal for one killed by a signal, as a shell
// reports it); err is then nil.
func (l *Lease) Exec(ctx context.Context, args []string, stdio Stdio) (code int, exited bool, err error) {
	argv := make([]string, 0, len(args))
	for _, a := range args {
		argv = append(argv, strings.ReplaceAll(a, "{data}", l.Dir))
	}
	child := exec.CommandContext(ctx, argv[0], argv[1:]...) //nolint:gosec // G204: the user's own command line (an argv, no shell), run as the user on the tree they asked for
	child.Env = append(os.Environ(), DataEnv+"="+l.Dir)
	child.Stdin, child.Stdout, child.Stderr = stdio.In, stdio.Out, stdio.Err
	shared, err := l.File()
	if err != nil {
		return 0, false, err
	}
	if shared != nil {
		defer func() { _ = shared.Close() }() // a duplicate of the lease's directory: nothing written
		child.ExtraFiles = []*os.File{shared}
	}
	// Signals go to the child; the lease is held until it exits.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if err := child.Start(); err != nil {
		signal.Stop(sigs)
		return 0, false, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for s := range sigs {
			_ = child.Process.Signal(s)
		}
	}()
	err = child.Wait()
	signal.Stop(sigs)
	close(sigs)
	<-forwarded
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code := exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return code, true, nil
	}
	return 0, err == nil, err
}
