// The side channel: the TCP connection over which a client and its server
// exchange what their QPs need, through the network of the side's NIC.

package progkit

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/rnic/rnic/nic/ibv"
)

// Dial connects from the client's NIC address to the server's side channel
// through network, retrying a refused connection for retry and giving up
// on one nothing answers (ibv.DialWait), with a line on notice while it
// waits. A failure is worded "NAME: failed TARGET: cause" (failed being
// "connect to", or rc_pingpong's "couldn't connect to"); a cancelled ctx
// returns ctx's error as is.
func (p Program) Dial(ctx context.Context, network ibv.Network, from netip.Addr, to netip.AddrPort,
	retry time.Duration, notice io.Writer, failed string) (net.Conn, error) {
	conn, err := ibv.DialWait(ctx, network, from, to, ibv.DialOptions{
		Retry: retry, Notice: notice, Who: p.Name, What: "the side channel"})
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("%s: %s %s: %w", p.Name, failed, to, err)
	}
	return conn, err
}

// Listen listens for the side channel on port through network: on addr,
// or on every address of the NIC when anyAddr (a server told no address
// of a NIC with several). The error is network's; the caller words it.
func Listen(network ibv.Network, addr netip.Addr, anyAddr bool, port int) (net.Listener, error) {
	if anyAddr {
		addr = netip.Addr{}
	}
	return network.Listen(netip.AddrPortFrom(addr, uint16(port)))
}

// AcceptOne waits for one client on l and closes l: a server serves one
// client, as rc_pingpong and perftest do. A cancelled ctx closes l and
// returns ctx's error; any other failure is l's, for the caller to word.
func AcceptOne(ctx context.Context, l net.Listener) (net.Conn, error) {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	conn, err := l.Accept()
	stop()
	l.Close()
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return conn, err
}
