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

package s3store

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// ErrEndpointDenied is the error when a store's endpoint resolved to an address that the process may not connect to.
var ErrEndpointDenied = errors.New("endpoint address denied")

// DialGuard refuses connections to addresses in denied ranges, unless an allowed range holds them.
// A tenant names any endpoint, and pqcache connects to it from a node, with the node's reach: the
// cloud's metadata service (link-local), the cluster's Services and pods. The check runs on the
// address that is being connected to, after name resolution (net.Dialer.Control), so a name that
// resolves to another address on the second lookup (DNS rebinding) gains nothing.
type DialGuard struct {
	denied, allowed []netip.Prefix
	// Setting names what configures the ranges, for the error: the chart values and flags.
	Setting string
}

// NewDialGuard parses denied and allowed, CIDRs such as 169.254.0.0/16 or fe80::/10 (a bare address
// is one address); setting names them for errors. It returns nil, allowing every address, when denied
// is empty.
func NewDialGuard(denied, allowed []string, setting string) (*DialGuard, error) {
	g := &DialGuard{Setting: setting}
	var err error
	if g.denied, err = parsePrefixes(denied); err != nil {
		return nil, fmt.Errorf("denied ranges: %w", err)
	}
	if g.allowed, err = parsePrefixes(allowed); err != nil {
		return nil, fmt.Errorf("allowed ranges: %w", err)
	}
	if len(g.denied) == 0 {
		return nil, nil
	}
	return g, nil
}

func parsePrefixes(cidrs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if !strings.Contains(c, "/") {
			a, err := netip.ParseAddr(c)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", c, err)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", c, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Check returns an error wrapping ErrEndpointDenied when ip is in a denied range and in no allowed
// one. IPv4-mapped IPv6 addresses are checked as IPv4.
func (g *DialGuard) Check(ip netip.Addr) error {
	if g == nil {
		return nil
	}
	ip = ip.Unmap()
	for _, p := range g.allowed {
		if p.Contains(ip) {
			return nil
		}
	}
	for _, p := range g.denied {
		if p.Contains(ip) {
			return &deniedError{ip: ip, in: p, setting: g.Setting}
		}
	}
	return nil
}

// control is the dialer's Control: address is the resolved "ip:port" about to be connected to.
func (g *DialGuard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read the address %q: %w", ErrEndpointDenied, address, err)
	}
	return g.Check(ap.Addr())
}

// Guard returns c with g checking every connection it makes; a nil g returns c.
func (g *DialGuard) Guard(c *awshttp.BuildableClient) *awshttp.BuildableClient {
	if g == nil {
		return c
	}
	return c.WithDialerOptions(func(d *net.Dialer) { d.Control = g.control })
}

// deniedError is a refused connection. It is not retryable: the same name gives the same answer.
type deniedError struct {
	ip      netip.Addr
	in      netip.Prefix
	setting string
}

func (e *deniedError) Error() string {
	return fmt.Sprintf("%v: %s is in %s, which %s", ErrEndpointDenied, e.ip, e.in, e.setting)
}

func (e *deniedError) Unwrap() error { return ErrEndpointDenied }

// RetryableError tells the SDK's retryer not to try again.
func (e *deniedError) RetryableError() bool { return false }
