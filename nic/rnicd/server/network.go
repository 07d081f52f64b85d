// The side channel (ibv.Network) through the daemon: listeners and
// connections on the TCP/IP stack that owns the NIC's addresses (the
// served device's ibv.Network), each connection handed to the client as a
// Unix stream socket the daemon splices to it (proxy.go).

package server

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpNetQuery, handleNetQuery)
	Register(proto.OpNetListen, handleNetListen)
	Register(proto.OpNetCloseListener, handleNetCloseListener)
	Register(proto.OpNetAccept, handleNetAccept)
	Register(proto.OpNetDial, handleNetDial)
	Register(proto.OpNetCancel, handleNetCancel)
}

// networkOf returns the session's device's network.
func networkOf(s *Session) (ibv.Network, error) {
	return deviceAs[ibv.Network](s, "rnicd: %s has no TCP/IP stack to share")
}

func handleNetQuery(s *Session, req *Request, rep *Reply) error {
	if err := req.Decode(&proto.Empty{}); err != nil {
		return err
	}
	_, ok := s.dev.dev.(ibv.Network)
	rep.Set(&proto.Available{Available: ok})
	return nil
}

// reserveSocket counts one socket against the client's limit.
func (x *sessionExt) reserveSocket() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errSessionGone
	}
	if lim := x.s.srv.limits.MaxSockets; x.sockets >= lim {
		return limitError(lim, "side-channel sockets", "MaxSockets")
	}
	x.sockets++
	return nil
}

func (x *sessionExt) unreserveSocket() {
	x.mu.Lock()
	x.sockets--
	x.mu.Unlock()
}

// netListener is a listener of a client, with the loop that accepts
// ahead of the client's requests by at most one connection (as a
// backlog of one beyond the stack's own).
type netListener struct {
	l     net.Listener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *netListener) run() {
	for {
		c, err := l.l.Accept()
		if err != nil {
			l.close()
			return
		}
		select {
		case l.conns <- c:
		case <-l.done:
			c.Close()
			return
		}
	}
}

func (l *netListener) close() {
	l.once.Do(func() {
		close(l.done)
		l.l.Close()
	})
}

// accept waits for the next connection.
func (l *netListener) accept(ctx context.Context) (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, fmt.Errorf("rnicd: listener closed: %w", verbs.ErrClosed)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// addrPortOf returns a net.Addr of a TCP stack as an AddrPort.
func addrPortOf(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

func handleNetListen(s *Session, req *Request, rep *Reply) error {
	var m proto.NetListenReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	n, err := networkOf(s)
	if err != nil {
		return err
	}
	if err := s.mayBind(m.Addr.Port()); err != nil {
		return err
	}
	x := extOf(s)
	if err := x.reserveSocket(); err != nil {
		return err
	}
	l, err := n.Listen(m.Addr)
	if err != nil {
		x.unreserveSocket()
		return err
	}
	nl := &netListener{l: l, conns: make(chan net.Conn), done: make(chan struct{})}
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		l.Close()
		return errSessionGone
	}
	h := x.newHandle()
	x.netListeners[h] = nl
	x.mu.Unlock()
	go nl.run()
	rep.Set(&proto.NetListenReply{Listener: h, Addr: addrPortOf(l.Addr())})
	return nil
}

func handleNetCloseListener(s *Session, req *Request, rep *Reply) error {
	var m proto.Handle
	if err := req.Decode(&m); err != nil {
		return err
	}
	x := extOf(s)
	x.mu.Lock()
	l, ok := x.netListeners[m.H]
	delete(x.netListeners, m.H)
	if ok {
		x.sockets--
	}
	x.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: listener %d", proto.ErrBadHandle, m.H)
	}
	l.close()
	rep.Set(&proto.Empty{})
	return nil
}

// socketpair returns the daemon's end of a new Unix stream socketpair and
// the client's, which the reply sends and After closes.
func socketpair(rep *Reply) (net.Conn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("rnicd: socketpair: %w", err)
	}
	c, err := fdConn(fds[0])
	if err != nil {
		unix.Close(fds[1])
		return nil, err
	}
	rep.After(func() { unix.Close(fds[1]) })
	rep.Set(&proto.Empty{}, fds[1])
	return c, nil
}

// handleNetAccept hands the client a socket at once and splices the
// listener's next connection to it.
func handleNetAccept(s *Session, req *Request, rep *Reply) error {
	var m proto.NetAcceptReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	x := extOf(s)
	x.mu.Lock()
	l, ok := x.netListeners[m.Listener]
	x.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: listener %d", proto.ErrBadHandle, m.Listener)
	}
	return x.startProxy(rep, m.Token, func(ctx context.Context) (net.Conn, error) { return l.accept(ctx) })
}

func handleNetDial(s *Session, req *Request, rep *Reply) error {
	var m proto.NetDialReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	n, err := networkOf(s)
	if err != nil {
		return err
	}
	return extOf(s).startProxy(rep, m.Token, func(ctx context.Context) (net.Conn, error) {
		return n.Dial(ctx, m.Local, m.Remote)
	})
}

// startProxy sends the client its end of a socketpair and, once connect
// gives a TCP connection, splices the two.
func (x *sessionExt) startProxy(rep *Reply, token uint32, connect func(context.Context) (net.Conn, error)) error {
	if err := x.reserveSocket(); err != nil {
		return err
	}
	local, err := socketpair(rep)
	if err != nil {
		x.unreserveSocket()
		return err
	}
	err = x.startAsync(rep, token, proto.OpNetResult, func(ctx context.Context) (proto.Message, func(), error) {
		c, err := connect(ctx)
		if err != nil {
			local.Close()
			x.unreserveSocket()
			return nil, nil, err
		}
		p := newProxy(local, c)
		x.mu.Lock()
		if x.closed {
			x.mu.Unlock()
			p.close()
			return nil, nil, errSessionGone
		}
		x.proxies[p] = struct{}{}
		x.mu.Unlock()
		info := &proto.NetConnInfo{Local: addrPortOf(c.LocalAddr()), Remote: addrPortOf(c.RemoteAddr())}
		return info, func() {
			go func() {
				p.run()
				x.mu.Lock()
				if _, ok := x.proxies[p]; ok {
					delete(x.proxies, p)
					x.sockets--
				}
				x.mu.Unlock()
			}()
		}, nil
	})
	if err != nil {
		local.Close()
		x.unreserveSocket()
		return err
	}
	return nil
}

func handleNetCancel(s *Session, req *Request, rep *Reply) error {
	var m proto.Token
	if err := req.Decode(&m); err != nil {
		return err
	}
	extOf(s).cancelAsync(m.Token)
	rep.Set(&proto.Empty{})
	return nil
}
