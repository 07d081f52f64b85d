// A connection that only says the daemon is there: rnic exec's view
// (nic/view) lives as long as the rnicd it shows, so that a restarted
// daemon gets a fresh view.

package client

import (
	"net"

	"github.com/rnic/rnic/nic/ibv"
)

// DialIdle connects to the rnicd listening on socket (ibv.DefaultSocketPath()
// if empty), checking who serves it as every client does, and returns a
// connection that opens no device and sends nothing. A read on it returns
// only when the daemon closes it: when the daemon goes away.
func DialIdle(socket string) (*net.UnixConn, error) {
	if socket == "" {
		socket = ibv.DefaultSocketPath()
	}
	conn, _, err := dial(socket)
	return conn, err
}
