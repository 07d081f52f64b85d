// Host ports (proto/hostport.go): a TAP of the caller's joins a TAP-mode
// NIC's wire, so that the kernel behind it (a program's view of the
// network, in a namespace of its own) reaches the wire with the NIC's MAC
// and addresses.

package client

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// ErrNotSupported is wrapped by AttachHostPort's error when the device
// takes no host port: not a TAP-mode NIC, or a daemon that predates host
// ports. The caller then keeps its TAP to itself.
var ErrNotSupported = verbs.ErrNotSupported

// attachTimeout bounds the attach round trip: a wedged daemon must not
// hang the program that waits for its network.
const attachTimeout = 10 * time.Second

// AttachHostPort hands tap, an fd of /dev/net/tun bound to a TAP
// (IFF_TAP|IFF_NO_PI, IFF_VNET_HDR optional), to the rnicd on socket
// (ibv.DefaultSocketPath() if empty) as the host port of its NIC device.
// It returns the MAC the TAP's kernel side must take (the NIC's) and the
// closer that detaches it again; the attachment also ends when this
// process dies. The caller keeps tap and may close its own copy. A NIC
// that is not in the TAP mode fails with an error wrapping
// ErrNotSupported, one with a host port already with verbs.ErrBusy.
func AttachHostPort(socket, device string, tap *os.File) (mac net.HardwareAddr, closer io.Closer, err error) {
	if socket == "" {
		socket = ibv.DefaultSocketPath()
	}
	raw, err := tap.SyscallConn()
	if err != nil {
		return nil, nil, fmt.Errorf("rnicd host port: %w", err)
	}
	conn, _, err := dial(socket)
	if err != nil {
		return nil, nil, err
	}
	conn.SetDeadline(time.Now().Add(attachTimeout))
	a := &adminConn{conn: conn, buf: make([]byte, proto.MaxMessage)}
	var rep proto.AttachHostPortReply
	var cerr error
	// Control, not Fd: Fd would switch the shared file description to
	// blocking mode.
	if err := raw.Control(func(fd uintptr) {
		cerr = a.call(proto.OpAttachHostPort, &proto.AttachHostPortReq{Device: device}, &rep, int(fd))
	}); err != nil {
		cerr = err
	}
	if cerr != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("rnicd host port for %s: %w", device, cerr)
	}
	conn.SetDeadline(time.Time{})
	return net.HardwareAddr(rep.MAC[:]), &HostPort{conn: conn, MTU: int(rep.MTU), Prefixes: rep.Prefixes}, nil
}

// HostPort is an attachment (AttachHostPort's closer): what the TAP's
// kernel side should carry besides the MAC, and the connection that
// keeps it attached.
type HostPort struct {
	conn *net.UnixConn
	// MTU is the NIC's link MTU.
	MTU int
	// Prefixes are the NIC's addresses with their on-link prefixes.
	Prefixes []netip.Prefix
}

// Close ends the attachment (the daemon detaches the TAP once it sees the
// connection close).
func (h *HostPort) Close() error {
	if err := h.conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("rnicd host port: %w", err)
	}
	return nil
}
