// Package porttest finds TCP ports for tests and tools that need a fixed
// port number before they listen (a program's side channel, a server
// started as a separate process).
package porttest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort returns a TCP port no socket of any address holds now, taken
// below the kernel's ephemeral range (ip_local_port_range): a port from
// that range, as ":0" gives, may meanwhile become some connection's source
// port, and a listener on all addresses then fails with EADDRINUSE.
func FreePort() (int, error) {
	const base = 20000
	span := ephemeralLow() - base
	if span < 1000 {
		span = 30000 // no room below the range: anywhere from base
	}
	for range 100 {
		p := base + rand.IntN(span)
		if l, err := net.Listen("tcp", ":"+strconv.Itoa(p)); err == nil {
			l.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("porttest: no free TCP port in %d..%d", base, base+span-1)
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 32768 // Linux's default
}
