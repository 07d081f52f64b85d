// Package progkit is the plumbing the two-sided verbs programs (perf,
// pingpong, rping) share, so that they cannot drift apart: how a host name
// becomes an address, which of a NIC's addresses a side takes, what a TAP
// NIC is built from, how a device of another backend is opened and what it
// refuses, and the side channel: a server listening for its one client, a
// client dialing it.
//
// Every address it returns is unmapped: an IPv4 address is 10.0.0.1, never
// ::ffff:10.0.0.1, whether it came from a literal, the resolver, a GID or a
// TAP prefix, so that comparing it with a NIC's own addresses and picking
// its family mean what they say.
//
// Errors start with the program's name (Program.Name), and configuration
// errors wrap the program's ErrConfig, as each program's own did.
package progkit

// Program is the program whose errors the plumbing words: its name starts
// them, and its ErrConfig is wrapped by those that are the user's to fix.
type Program struct {
	Name      string
	ErrConfig error
}
