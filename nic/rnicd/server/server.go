// The server: the devices it serves, its per-client limits, the listeners
// it accepts clients on, and its statistics.

package server

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

// Limits bound how many clients the server takes and what one client (one
// connection) may hold. Zero fields take DefaultLimits' values.
type Limits struct {
	// MaxClients is the most connections the server serves at once.
	MaxClients int
	// MaxClientsPerUID is the most connections of one uid (SO_PEERCRED)
	// the server serves at once.
	MaxClientsPerUID int
	// MaxQPs is the most QPs a client may have.
	MaxQPs int
	// MaxMRs is the most MRs a client may have.
	MaxMRs int
	// MaxMRBytes bounds the client memory the daemon maps for a
	// client's MRs (the whole memfd of each registration counts).
	MaxMRBytes uint64
	// MaxRingBytes bounds the ring memory the daemon creates for a
	// client's QPs, SRQs and CQs.
	MaxRingBytes uint64
	// MaxObjects is the most PDs, CQs, SRQs, AHs and MWs a client may have,
	// together.
	MaxObjects int
	// MaxSockets is the most side-channel listeners and connections
	// (accepts and dials in progress included) a client may have.
	MaxSockets int
	// MaxCMIDs is the most rdma_cm listeners, requests and connections
	// a client may have, together.
	MaxCMIDs int
	// MaxMRsPerUID and MaxMappedBytesPerUID bound the MRs, and the MR
	// and ring memory the daemon maps, of all clients of one uid together.
	MaxMRsPerUID         int
	MaxMappedBytesPerUID uint64
	// MaxMappings and MaxMappedBytes bound the same for every client
	// together: the daemon's map count and address space are finite.
	MaxMappings    int
	MaxMappedBytes uint64
	// MaxQueueBytesPerUID and MaxQueueBytes bound the daemon's own memory
	// for the queues of QPs (the engines' per-WR state, allocated whole
	// at creation), per uid and for all clients.
	MaxQueueBytesPerUID uint64
	MaxQueueBytes       uint64
}

// DefaultLimits returns generous limits: a process with thousands of QPs
// fits, a runaway one does not take the daemon down.
func DefaultLimits() Limits {
	return Limits{
		MaxClients:       1024,
		MaxClientsPerUID: 256,
		MaxQPs:           4096,
		MaxMRs:           1 << 16,
		MaxMRBytes:       1 << 40,
		MaxRingBytes:     16 << 30,
		MaxObjects:       1 << 16,
		MaxSockets:       1024,
		MaxCMIDs:         4096,
		// A few clients of one user may each hold a lot; all of them
		// together may not take the daemon's address space (128 TiB on
		// x86-64) or map count.
		MaxMRsPerUID:         1 << 14,
		MaxMappedBytesPerUID: 4 << 40,
		MaxMappings:          defaultMappings(),
		MaxMappedBytes:       32 << 40,
		// 10,000 QPs of 128 WRs each way cost ~0.5 GiB; a QP of 2^20
		// WRs each way ~0.3 GiB.
		MaxQueueBytesPerUID: 2 << 30,
		MaxQueueBytes:       8 << 30,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxClients <= 0 {
		l.MaxClients = d.MaxClients
	}
	if l.MaxClientsPerUID <= 0 {
		l.MaxClientsPerUID = d.MaxClientsPerUID
	}
	if l.MaxQPs <= 0 {
		l.MaxQPs = d.MaxQPs
	}
	if l.MaxMRs <= 0 {
		l.MaxMRs = d.MaxMRs
	}
	if l.MaxMRBytes == 0 {
		l.MaxMRBytes = d.MaxMRBytes
	}
	if l.MaxRingBytes == 0 {
		l.MaxRingBytes = d.MaxRingBytes
	}
	if l.MaxObjects <= 0 {
		l.MaxObjects = d.MaxObjects
	}
	if l.MaxSockets <= 0 {
		l.MaxSockets = d.MaxSockets
	}
	if l.MaxCMIDs <= 0 {
		l.MaxCMIDs = d.MaxCMIDs
	}
	if l.MaxMRsPerUID <= 0 {
		l.MaxMRsPerUID = d.MaxMRsPerUID
	}
	if l.MaxMappedBytesPerUID == 0 {
		l.MaxMappedBytesPerUID = d.MaxMappedBytesPerUID
	}
	if l.MaxMappings <= 0 {
		l.MaxMappings = d.MaxMappings
	}
	if l.MaxMappedBytes == 0 {
		l.MaxMappedBytes = d.MaxMappedBytes
	}
	if l.MaxQueueBytesPerUID == 0 {
		l.MaxQueueBytesPerUID = d.MaxQueueBytesPerUID
	}
	if l.MaxQueueBytes == 0 {
		l.MaxQueueBytes = d.MaxQueueBytes
	}
	return l
}

// Config describes a server.
type Config struct {
	// Devices are served by name; the server reads their event
	// channels (nothing else may) but does not close them.
	Devices []ibv.Device
	// Limits bound each client.
	Limits Limits
	// Logf, if set, receives one line per client arrival, departure and
	// client error.
	Logf func(format string, args ...any)
	// HostPorts attach host ports to the devices that take them (TAP-mode
	// NICs), by device name (hostport.go).
	HostPorts map[string]HostPortFunc
	// Tenants each serve their own devices on sockets of their own
	// (ServeTenant); Serve's socket serves the devices none of them has
	// (tenant.go).
	Tenants []TenantConfig
}

// Server serves devices to clients.
type Server struct {
	limits Limits
	budget *budget // mappings per uid and in total
	logf   func(string, ...any)
	devs   map[string]*device
	// hostPorts is Config.HostPorts (read only).
	hostPorts map[string]HostPortFunc
	stats     stats
	nextID    atomic.Uint64
	// host is the tenant of Serve's sockets; tenants are the others, by
	// name (read only).
	host    *tenant
	tenants map[string]*tenant

	mu        sync.Mutex
	closed    bool
	listeners map[*net.UnixListener]struct{}
	sessions  map[*Session]struct{}
	perUID    map[tenantUID]int // sessions of each uid of each tenant
	wg        sync.WaitGroup    // sessions and accept loops
	done      chan struct{}     // closed by Close: wakes accept loops waiting to retry
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("rnicd: server closed")

// New returns a server of cfg.Devices. It starts reading their events.
func New(cfg Config) (*Server, error) {
	s := &Server{
		limits:    cfg.Limits.withDefaults(),
		logf:      cfg.Logf,
		devs:      make(map[string]*device),
		hostPorts: cfg.HostPorts,
		listeners: make(map[*net.UnixListener]struct{}),
		sessions:  make(map[*Session]struct{}),
		perUID:    make(map[tenantUID]int),
		done:      make(chan struct{}),
	}
	s.budget = newBudget(&s.limits)
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	for _, d := range cfg.Devices {
		if _, dup := s.devs[d.Name()]; dup {
			return nil, fmt.Errorf("rnicd: two devices named %s", d.Name())
		}
		s.devs[d.Name()] = newDevice(s, d)
	}
	var err error
	if s.host, s.tenants, err = newTenants(cfg.Tenants, s.devs); err != nil {
		return nil, err
	}
	for _, d := range s.devs {
		go d.routeEvents()
	}
	return s, nil
}

// Serve accepts the host's clients on l until l fails or Close; it closes
// l.
func (s *Server) Serve(l *net.UnixListener) error { return s.serve(l, s.host) }

// serve accepts the clients of tenant t on l until l fails or Close; it
// closes l.
func (s *Server) serve(l *net.UnixListener, t *tenant) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()
	var retry acceptRetry
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if !acceptRetryable(err) {
				return fmt.Errorf("rnicd: accept: %w", err)
			}
			// Out of descriptors (a client holding many, or the
			// system's table full): keep serving the clients there
			// are and accept again once some come back.
			s.stats.acceptErrors.Add(1)
			d := retry.next()
			if d == acceptBackoffMin {
				s.logf("accept: %v: retrying (clients already connected are served)", err)
			}
			if !s.waitRetry(d) {
				return ErrServerClosed
			}
			continue
		}
		retry.reset()
		s.start(c, t)
	}
}

// start runs a session of tenant t for c, or refuses it beyond the client
// caps or the tenant's peers.
func (s *Server) start(c *net.UnixConn, t *tenant) {
	sess := newSession(s, t, c)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return
	}
	uid := sess.cred.Uid
	refused := s.admit(t, uid, sess.cred.Gid)
	if refused == nil {
		s.sessions[sess] = struct{}{}
		s.perUID[tenantUID{t, uid}]++
		t.clients++
	}
	s.wg.Add(1)
	s.mu.Unlock()
	if refused != nil {
		s.stats.clientsRefused.Add(1)
		sess.logf("refused: %v", refused)
		go func() {
			defer s.wg.Done()
			refuse(c, refused)
		}()
		return
	}
	s.stats.clientsAccepted.Add(1)
	go func() {
		defer s.wg.Done()
		sess.serve()
		s.mu.Lock()
		delete(s.sessions, sess)
		if s.perUID[tenantUID{t, uid}]--; s.perUID[tenantUID{t, uid}] == 0 {
			delete(s.perUID, tenantUID{t, uid})
		}
		t.clients--
		t.gone.addAll(sess.counts.load()) // with its leaving: counted once in statTenant
		s.mu.Unlock()
	}()
}

// admit returns the error of a cap that one more client of uid and gid
// on tenant t's socket would exceed, or of t's refusing it, or nil. s.mu
// is held.
func (s *Server) admit(t *tenant, uid, gid uint32) error {
	if err := t.admitPeer(uid, gid); err != nil {
		return err
	}
	if err := t.admitClient(); err != nil {
		return err
	}
	if n := s.limits.MaxClients; len(s.sessions) >= n {
		return fmt.Errorf("%w: %d clients (rnicd --max-clients)", proto.ErrLimit, n)
	}
	if n := s.limits.MaxClientsPerUID; s.perUID[tenantUID{t, uid}] >= n {
		return fmt.Errorf("%w: %d clients of uid %d (rnicd --max-clients-per-uid)", proto.ErrLimit, n, uid)
	}
	return nil
}

// Close stops accepting, ends every session (reaping its objects) and
// waits for them. It does not close the devices.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.closed = true
	close(s.done)
	for l := range s.listeners {
		l.Close()
	}
	for sess := range s.sessions {
		sess.conn.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Client describes a connected client.
type Client struct {
	ID       uint64
	PID      int32
	UID, GID uint32
	// Comm is the client's process name (/proc/PID/comm) when it
	// connected.
	Comm string
	// Tenant is the tenant whose socket it came on ("": the host's).
	Tenant string
	// Device is the device it opened ("" before OPEN).
	Device  string
	QPs     int
	MRs     int
	Objects int // PDs, CQs, SRQs and AHs
	MRBytes uint64
	// Counts are what it made the daemon do.
	Counts ClientCounts
}

// Clients lists the connected clients.
func (s *Server) Clients() []Client {
	s.mu.Lock()
	sessions := make([]*Session, 0, len(s.sessions))
	for sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	out := make([]Client, 0, len(sessions))
	for _, sess := range sessions {
		out = append(out, sess.info())
	}
	return out
}
