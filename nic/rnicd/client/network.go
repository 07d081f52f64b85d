// The side channel through the daemon (ibv.Network): Listen and Dial run
// on the TCP/IP stack that owns the NIC's addresses, the daemon's; each
// connection is a Unix stream socket the daemon splices to its TCP
// connection, so reads, writes, deadlines and half-closes are the
// kernel's, without a round trip per byte.

package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

// network is a Device's ibv.Network.
type network struct{ d *Device }

var _ ibv.Network = network{}

// Listen listens on addr (an address of the NIC, or unspecified) on the
// daemon's stack; in an rnic exec view, on this process's own kernel TCP,
// where the view's interfaces carry the NICs' addresses (ibv.ViewEnv).
func (n network) Listen(addr netip.AddrPort) (net.Listener, error) {
	if ibv.InView() {
		return ibv.KernelNetwork{}.Listen(addr)
	}
	var rep proto.NetListenReply
	if _, err := n.d.call(proto.OpNetListen, &proto.NetListenReq{Addr: addr}, nil, &rep); err != nil {
		var remote *proto.RemoteError
		if errors.As(err, &remote) {
			return nil, err // the daemon's words name the address already
		}
		return nil, fmt.Errorf("rnicd: listen on %s: %w", listenAddrString(addr), err)
	}
	return &listener{d: n.d, h: rep.Listener, addr: rep.Addr, closed: make(chan struct{})}, nil
}

// Dial connects from local (an address of the NIC, or invalid) to remote
// through the daemon's stack.
func (n network) Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	if ibv.InView() {
		return ibv.KernelNetwork{}.Dial(ctx, local, remote)
	}
	c, err := n.d.proxied(ctx, proto.OpNetDial, func(tok uint32) proto.Message {
		return &proto.NetDialReq{Token: tok, Local: local, Remote: remote}
	})
	if err != nil {
		return nil, fmt.Errorf("rnicd: dial %v: %w", remote, err)
	}
	return c, nil
}

// proxied runs a NET_DIAL or NET_ACCEPT: the reply brings the socket, the
// result the TCP connection's addresses.
func (d *Device) proxied(ctx context.Context, op proto.Op, req func(uint32) proto.Message) (net.Conn, error) {
	p, fds, err := d.startAsync(op, req)
	if err != nil {
		return nil, err
	}
	var sock *net.UnixConn
	if len(fds) == 1 {
		sock, err = unixConn(fds[0])
	} else {
		closeFDs(fds)
		err = fmt.Errorf("%v reply with %d descriptors: %w", op, len(fds), proto.ErrMalformed)
	}
	var info proto.NetConnInfo
	rerr, ctxErr := p.wait(ctx, proto.OpNetCancel, &info)
	if err == nil {
		err = rerr
	}
	if err == nil {
		err = ctxErr
	}
	if err != nil {
		if sock != nil {
			sock.Close() // the daemon's proxy, if any, sees EOF and closes
		}
		return nil, err
	}
	return &conn{UnixConn: sock, local: net.TCPAddrFromAddrPort(info.Local), remote: net.TCPAddrFromAddrPort(info.Remote)}, nil
}

// unixConn makes a received socket a *net.UnixConn (taking it over).
func unixConn(fd int) (*net.UnixConn, error) {
	f := os.NewFile(uintptr(fd), "rnicd-side-channel")
	defer f.Close() // FileConn dups it
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("rnicd: side-channel socket: %w", err)
	}
	u, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("rnicd: side-channel socket is a %T: %w", c, proto.ErrMalformed)
	}
	return u, nil
}

// conn is a TCP connection of the daemon's stack as the client sees it:
// the socket spliced to it, with the TCP connection's addresses.
type conn struct {
	*net.UnixConn
	local, remote *net.TCPAddr
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

// listener is a listener of the daemon's stack.
type listener struct {
	d      *Device
	h      uint32
	addr   netip.AddrPort
	closed chan struct{}
	once   sync.Once
}

// Accept waits for the next connection; after Close it fails with an
// error wrapping net.ErrClosed.
func (l *listener) Accept() (net.Conn, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	c, err := l.d.proxied(ctx, proto.OpNetAccept, func(tok uint32) proto.Message {
		return &proto.NetAcceptReq{Token: tok, Listener: l.h}
	})
	if err != nil {
		select {
		case <-l.closed:
			return nil, fmt.Errorf("rnicd: accept on %v: %w", l.addr, net.ErrClosed)
		default:
		}
		if errors.Is(err, proto.ErrBadHandle) {
			err = errors.Join(err, net.ErrClosed)
		}
		return nil, fmt.Errorf("rnicd: accept on %v: %w", l.addr, err)
	}
	return c, nil
}

// Close stops listening; Accepts waiting fail.
func (l *listener) Close() error {
	first := false
	l.once.Do(func() { first = true; close(l.closed) })
	if !first {
		return fmt.Errorf("rnicd: listener %v: %w", l.addr, net.ErrClosed)
	}
	if _, err := l.d.call(proto.OpNetCloseListener, &proto.Handle{H: l.h}, nil, &proto.Empty{}); err != nil && l.d.goneError() == nil {
		return err
	}
	return nil
}

// Addr is the address the listener listens on.
func (l *listener) Addr() net.Addr { return net.TCPAddrFromAddrPort(l.addr) }

// listenAddrString says where a listener listens: ":PORT" for every
// address, as Go's and the kernel's errors say it (an AddrPort with no
// address prints as "invalid AddrPort").
func listenAddrString(a netip.AddrPort) string {
	if !a.Addr().IsValid() {
		return fmt.Sprintf(":%d", a.Port())
	}
	return a.String()
}
