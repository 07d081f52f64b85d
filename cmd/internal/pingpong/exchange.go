// The side channel: one TCP connection over which the two sides swap their
// address messages in rc_pingpong's order (client first), and which
// then serves as the barrier at the end of the run (linger). The server
// connects its QP before it answers, so by the time the client has the
// server's address the server is ready to receive; the client connects its
// own QP before it writes "done", so the server never sends to a QP that
// cannot answer.

package pingpong

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/rnic/rnic/cmd/internal/progkit"
	"github.com/rnic/rnic/nic/ibv"
)

// ClientExchange runs the client's half on conn: it writes local, reads the
// server's address, calls connect with it, then writes "done".
func ClientExchange(conn io.ReadWriter, local Dest, connect func(remote Dest) error) (Dest, error) {
	msg := local.Marshal()
	if _, err := conn.Write(msg[:]); err != nil {
		return Dest{}, fmt.Errorf("pingpong: couldn't send local address: %w", err)
	}
	var in [MsgSize]byte
	if _, err := io.ReadFull(conn, in[:]); err != nil {
		return Dest{}, fmt.Errorf("pingpong: couldn't read remote address: %w", err)
	}
	remote, err := ParseDest(in[:])
	if err != nil {
		return Dest{}, err
	}
	if err := connect(remote); err != nil {
		return Dest{}, err
	}
	if _, err := conn.Write(doneMsg[:]); err != nil {
		return Dest{}, fmt.Errorf("pingpong: couldn't send done: %w", err)
	}
	return remote, nil
}

// ServerExchange runs the server's half on conn: it reads the client's
// address, calls connect with it, writes local, then waits for "done".
func ServerExchange(conn io.ReadWriter, local Dest, connect func(remote Dest) error) (Dest, error) {
	var in [MsgSize]byte
	if _, err := io.ReadFull(conn, in[:]); err != nil {
		return Dest{}, fmt.Errorf("pingpong: couldn't read remote address: %w", err)
	}
	remote, err := ParseDest(in[:])
	if err != nil {
		return Dest{}, err
	}
	if err := connect(remote); err != nil {
		return Dest{}, fmt.Errorf("pingpong: couldn't connect to remote QP: %w", err)
	}
	msg := local.Marshal()
	if _, err := conn.Write(msg[:]); err != nil {
		return Dest{}, fmt.Errorf("pingpong: couldn't send local address: %w", err)
	}
	var done [len(doneMsg)]byte
	if _, err := io.ReadFull(conn, done[:]); err != nil {
		return Dest{}, fmt.Errorf("pingpong: couldn't read done: %w", err)
	}
	if !bytes.Equal(done[:], doneMsg[:]) {
		return Dest{}, fmt.Errorf("%w: %q instead of \"done\"", ErrMalformed, done[:])
	}
	return remote, nil
}

// peerIP returns the IP address of conn's remote end, or nil.
func peerIP(conn net.Conn) net.IP { return tcpIP(conn.RemoteAddr()) }

// localIP returns the IP address of conn's local end, or nil.
func localIP(conn net.Conn) net.IP { return tcpIP(conn.LocalAddr()) }

func tcpIP(a net.Addr) net.IP {
	if a, ok := a.(*net.TCPAddr); ok {
		return a.IP
	}
	return nil
}

// sideChannel accepts the client (server) or connects to the server
// (client), through the side's network.
func sideChannel(ctx context.Context, r *resolved, h ibv.Network) (net.Conn, error) {
	if r.Server == "" {
		l := r.Listener
		if l == nil {
			var err error
			l, err = progkit.Listen(h, r.Addr, r.anyAddr, r.Port)
			if err != nil {
				return nil, fmt.Errorf("pingpong: couldn't listen to port %d: %w", r.Port, err)
			}
		}
		// One client, as rc_pingpong: the listener closes once it has it.
		conn, err := progkit.AcceptOne(ctx, l)
		if err != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("pingpong: accept() failed: %w", err)
		}
		return conn, err
	}
	target := netip.AddrPortFrom(r.server, uint16(r.Port))
	return kit.Dial(ctx, h, r.Addr, target, r.DialRetry, r.Err, "couldn't connect to")
}

// lingerMax bounds how long a side that has finished waits for its peer
// to finish too.
const lingerMax = 5 * time.Second

// linger keeps this side's NIC up until the peer has finished its loop
// too, using the side channel as a barrier: it half-closes the connection
// and waits for the peer to close its end (or lingerMax). Without it the
// side that finishes first could tear its QP down before its NIC has
// acknowledged the peer's last message, and the peer would retry into the
// void and fail. Real ibv_rc_pingpong closes its connection right after
// the exchange, so against it the wait ends at once; the bytes exchanged
// are rc_pingpong's either way.
func linger(conn net.Conn) {
	// Kernel and netstack (gonet) TCP connections both half-close.
	if tc, ok := conn.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
	conn.SetReadDeadline(time.Now().Add(lingerMax))
	io.Copy(io.Discard, conn)
}
