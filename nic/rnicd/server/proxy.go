// A proxy splices a client's Unix stream socket to a TCP connection of the
// daemon's stack, byte for byte both ways. A half-close travels: EOF from
// one side shuts the other's write side, so a peer that closes its
// sending half still reads the answer. Either side failing (a killed
// client's socket, a reset connection) closes both.

package server

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
)

type proxy struct {
	client net.Conn // the daemon's end of the client's socketpair
	tcp    net.Conn
	once   sync.Once
}

func newProxy(client, tcp net.Conn) *proxy { return &proxy{client: client, tcp: tcp} }

// fdConn makes a socket descriptor a net.Conn (taking it over).
func fdConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "rnicd-socketpair")
	defer f.Close() // FileConn dups it
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("rnicd: socket: %w", err)
	}
	return c, nil
}

// run copies both ways until both are done, then closes both.
func (p *proxy) run() {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(p.tcp, p.client) }()
	go func() { defer wg.Done(); p.pipe(p.client, p.tcp) }()
	wg.Wait()
	p.close()
}

// pipe copies src to dst; at src's EOF it shuts dst's write side, on an
// error it closes both.
func (p *proxy) pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if err != nil {
		p.close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	p.close()
}

func (p *proxy) close() {
	p.once.Do(func() {
		p.client.Close()
		p.tcp.Close()
	})
}
