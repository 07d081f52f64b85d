// The sockets of an Endpoint: opening, configuring, closing.
//
// Every socket is a non-blocking kernel fd wrapped in an *os.File, so that
// the Go poller parks a reader or a blocked sender instead of an OS thread,
// and so that closing is safe: a send racing Close gets an error from the
// file (which Send reports as transport.ErrClosed) rather than writing to a
// reused fd number, and closing the file wakes the receive loop.
//
// The options are what makes the IP and UDP headers reproducible on the
// other side (header.go): IP_MTU_DISCOVER=IP_PMTUDISC_DO on an unconnected
// socket makes Linux send DF with IP ID 0 (a connected one would count IDs
// up), SO_NO_CHECK sends the zero UDP checksum rxe sends, and IPv6 auto
// flow labels are turned off so the flow label is the 0 the engine builds.

package udp

import (
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// ipv6FlowInfo is IPV6_FLOWINFO (linux/in6.h), which x/sys/unix lacks: as a
// socket option it asks for the received flow information as ancillary data.
const ipv6FlowInfo = 11

// sendRecvBuffer is the SO_RCVBUF of the per-port send sockets, which
// nothing reads: a stray datagram to a source port must not pin much memory.
const sendRecvBuffer = 4096

// sock is one kernel socket.
type sock struct {
	f  *os.File
	rc syscall.RawConn
	// A per-port send socket counts its users (ports_linux.go); the
	// main socket does not.
	perPort bool
	refs    atomic.Int32
	// leaving is set before a group socket is closed by LeaveGroup, so
	// its reader ends without counting an error.
	leaving atomic.Bool
}

// portSock is the socket frames with one source port leave from.
type portSock struct {
	s        *sock
	fallback bool // the main socket, standing in for a port that could not be bound
}

// sysState is the Linux part of an Endpoint.
type sysState struct {
	main   *sock
	rcvbuf int // SO_RCVBUF of main as the kernel set it
	reader *reader
	done   chan struct{} // closed when the receive loop has returned

	mu    sync.RWMutex
	ports map[uint16]portSock // by UDP source port
	holds map[uint16]int      // holders of each source port
	idle  []uint16            // ports with a socket and no holder, oldest first

	// groups are the multicast groups joined (group_linux.go).
	groups map[netip.Addr]*groupSock

	one   sync.Pool // *msgs of one message, for Send
	batch sync.Pool // *msgs of BatchSize messages, for SendBatch

	loop loopQueue // frames looped from endpoints of this process (loopback_linux.go)
}

// open creates the listening socket and starts the receive loop.
func (e *Endpoint) open() error {
	main, err := e.openSock(e.cfg.Port, true)
	if err != nil {
		return err
	}
	v6 := e.cfg.Addr.Is6()
	e.sys.main = main
	e.sys.rcvbuf = e.cfg.RecvBuffer
	if err := main.rc.Control(func(fd uintptr) {
		if n, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF); err == nil {
			e.sys.rcvbuf = n
		}
	}); err != nil {
		main.f.Close()
		return err
	}
	if e.cfg.RecvTimestamps {
		awaitArrivalStamps() // stamps_linux.go
	}
	e.sys.ports = make(map[uint16]portSock)
	e.sys.holds = make(map[uint16]int)
	e.sys.one.New = func() any { return newMsgs(1, v6) }
	e.sys.batch.New = func() any { return newMsgs(e.cfg.BatchSize, v6) }
	e.sys.reader = newReader(e, main)
	e.sys.done = make(chan struct{})
	go func() {
		defer close(e.sys.done)
		e.sys.reader.run()
	}()
	if e.cfg.Loopback {
		e.sys.loop.init(e)
		go e.sys.loop.run(e)
		registerLocal(e)
	}
	return nil
}

// RecvBufferBytes implements transport.RecvBufferSizer: the listening
// socket's receive buffer as the kernel accounts it (twice what was asked,
// capped by net.core.rmem_max).
func (e *Endpoint) RecvBufferBytes() int { return e.sys.rcvbuf }

// openSock opens a socket bound to (Addr, port). The listening socket asks
// for the ancillary data the receive side needs and is exclusive: a second
// endpoint on the same address and port fails to open instead of silently
// sharing its traffic. Send sockets set SO_REUSEADDR and SO_REUSEPORT, so
// that endpoints of one process whose QPs hash to the same source port can
// all bind it.
func (e *Endpoint) openSock(port uint16, listen bool) (*sock, error) {
	return e.openSockAt(e.cfg.Addr, port, listen, false)
}

// openSockAt opens a socket bound to (addr, port). A group socket
// (group.go) is a listening one bound to a multicast address, shared with
// the other members of the host (SO_REUSEADDR: each gets a copy).
func (e *Endpoint) openSockAt(addr netip.Addr, port uint16, listen, group bool) (*sock, error) {
	v6 := e.cfg.Addr.Is6()
	family, level := unix.AF_INET, unix.IPPROTO_IP
	if v6 {
		family, level = unix.AF_INET6, unix.IPPROTO_IPV6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	type opt struct {
		level, name, value int
		optional           bool // older kernels may lack it
	}
	opts := []opt{}
	if v6 {
		opts = append(opts,
			opt{level, unix.IPV6_V6ONLY, 1, false},
			opt{level, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO, false},
			opt{level, unix.IPV6_AUTOFLOWLABEL, 0, true},
		)
	} else {
		opts = append(opts,
			opt{level, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO, false},
			opt{unix.SOL_SOCKET, unix.SO_NO_CHECK, 1, false},
		)
	}
	if group {
		// The drop count of SO_RXQ_OVFL stays the main socket's.
		opts = append(opts, opt{unix.SOL_SOCKET, unix.SO_REUSEADDR, 1, false})
	}
	if listen {
		opts = append(opts, opt{unix.SOL_SOCKET, unix.SO_RCVBUF, e.cfg.RecvBuffer, false})
		if !group {
			opts = append(opts, opt{unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1, true})
		}
		if e.cfg.RecvTimestamps {
			opts = append(opts, opt{unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1, false})
		}
		if v6 {
			opts = append(opts,
				opt{level, unix.IPV6_RECVPKTINFO, 1, false},
				opt{level, unix.IPV6_RECVTCLASS, 1, false},
				opt{level, unix.IPV6_RECVHOPLIMIT, 1, false},
				opt{level, ipv6FlowInfo, 1, true},
			)
		} else {
			opts = append(opts,
				opt{level, unix.IP_PKTINFO, 1, false},
				opt{level, unix.IP_RECVTOS, 1, false},
				opt{level, unix.IP_RECVTTL, 1, false},
			)
		}
	} else {
		opts = append(opts,
			opt{unix.SOL_SOCKET, unix.SO_REUSEADDR, 1, false},
			opt{unix.SOL_SOCKET, unix.SO_REUSEPORT, 1, false},
			opt{unix.SOL_SOCKET, unix.SO_RCVBUF, sendRecvBuffer, false},
		)
	}
	for _, o := range opts {
		if err := unix.SetsockoptInt(fd, o.level, o.name, o.value); err != nil && !o.optional {
			unix.Close(fd)
			return nil, fmt.Errorf("setsockopt(%d, %d, %d): %w", o.level, o.name, o.value, err)
		}
	}
	if err := unix.Bind(fd, sockaddr(addr.AsSlice(), port)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind [%v]:%d: %w", addr, port, err)
	}
	if group {
		if err := e.joinOn(fd, addr); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	f := os.NewFile(uintptr(fd), fmt.Sprintf("udp:[%v]:%d", addr, port))
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &sock{f: f, rc: rc, perPort: !listen}, nil
}

// sockaddr builds a unix.Sockaddr for bind (setup only: it allocates).
func sockaddr(ip []byte, port uint16) unix.Sockaddr {
	if len(ip) == 4 {
		return &unix.SockaddrInet4{Port: int(port), Addr: [4]byte(ip)}
	}
	return &unix.SockaddrInet6{Port: int(port), Addr: [16]byte(ip)}
}

// close closes every socket (which ends the receive loop) and waits for
// the loop to return.
func (e *Endpoint) close() error {
	if e.cfg.Loopback {
		unregisterLocal(e)
		e.sys.loop.stop()
	}
	e.closeGroups()
	e.sys.mu.Lock()
	var socks []*sock
	for _, ps := range e.sys.ports {
		if !ps.fallback {
			socks = append(socks, ps.s)
		}
	}
	clear(e.sys.ports)
	clear(e.sys.holds)
	e.sys.idle = nil
	e.sys.mu.Unlock()
	// Sends in flight fail with ErrClosed (the closed flag is set); their
	// later unref closes the file again, which is harmless.
	err := e.sys.main.f.Close()
	for _, s := range socks {
		if cerr := s.f.Close(); err == nil {
			err = cerr
		}
	}
	<-e.sys.done
	return err
}
