package agent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"

	"github.com/rnic/rnic/nic/ibv"
)

// Config configures an agent.
type Config struct {
	// Device is the DUT; the agent does not close it.
	Device ibv.Device
	// Kind is reported in device_info ("" derives it: "rnic" for an
	// in-process or rnicd NIC, else the device name without its number).
	Kind string
	// Listen is the TCP address to listen on (127.0.0.1:0 if empty).
	Listen string
	// Tester is the only address connections are accepted from; the zero
	// value accepts loopback addresses only.
	Tester netip.Addr
	// Log, if set, gets one line per connection and per refusal.
	Log io.Writer
}

// Server is a listening agent.
type Server struct {
	cfg    Config
	ln     net.Listener
	events *eventLog
	mu     sync.Mutex
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
	closed bool
}

// Listen starts an agent; Serve accepts its connections.
func Listen(cfg Config) (*Server, error) {
	if cfg.Device == nil {
		return nil, errors.New("agent: no device")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	s := &Server{cfg: cfg, ln: ln, events: newEventLog(cfg.Device), conns: map[net.Conn]bool{}}
	return s, nil
}

// Addr is the address the agent listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until Close; each is a session of its own.
func (s *Server) Serve() error {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("agent: %w", err)
		}
		if !s.allowed(c.RemoteAddr()) {
			s.logf("refused a connection from %v (only the tester's address is accepted)", c.RemoteAddr())
			c.Close()
			continue
		}
		if !s.track(c) {
			c.Close()
			return nil
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			s.logf("tester connected from %v", c.RemoteAddr())
			newSession(s, c).serve()
		}()
	}
}

// allowed is the tester-address check.
func (s *Server) allowed(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return false
	}
	ip = ip.Unmap()
	if !s.cfg.Tester.IsValid() {
		return ip.IsLoopback()
	}
	return ip == s.cfg.Tester.Unmap()
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = true
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// Close stops listening, ends every session (destroying its objects) and
// waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	s.events.close()
	return err
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, "rnic conform agent: "+format+"\n", args...)
	}
}
