// Host ports (proto/hostport.go): a client's TAP joins a TAP-mode NIC's
// wire for as long as its connection lasts. Which NICs take one, and how,
// is the daemon's business (Config.HostPorts); the session only keeps the
// attachment and ends it when the client goes.

package server

import (
	"fmt"
	"io"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// HostPortFunc attaches tap (the server's own descriptor, which it takes)
// to a NIC as its host port. It returns the MAC and Ethernet MTU the TAP's
// kernel side should have, and what detaches it.
type HostPortFunc func(tap *os.File, user bool) (HostPort, error)

// HostPort is an attached host port: what the TAP's kernel side should
// carry (the NIC's MAC, MTU and addresses with their prefixes) and how to
// detach it.
type HostPort struct {
	MAC      [6]byte
	MTU      int
	Prefixes []netip.Prefix
	Detach   io.Closer
}

func init() { Register(proto.OpAttachHostPort, handleAttachHostPort) }

func handleAttachHostPort(s *Session, req *Request, rep *Reply) error {
	var m proto.AttachHostPortReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	if len(req.FDs) != 1 {
		return fmt.Errorf("%w: %v carries one TAP descriptor, not %d", proto.ErrMalformed, req.Op, len(req.FDs))
	}
	if _, ok := s.tenant.devs[m.Device]; !ok {
		return fmt.Errorf("%w: %q", proto.ErrNoDevice, m.Device)
	}
	attach := s.srv.hostPorts[m.Device]
	if attach == nil {
		return fmt.Errorf("rnicd: %s is not a TAP-mode NIC, so it has no wire to share with a host port: %w",
			m.Device, verbs.ErrNotSupported)
	}
	// The request's descriptors are closed after the handler: keep a dup.
	fd, err := unix.FcntlInt(uintptr(req.FDs[0]), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("rnicd: host port descriptor: %w", err)
	}
	hp, err := attach(os.NewFile(uintptr(fd), "tap"), userHostPort(s.cred.Uid, os.Getuid()))
	if err != nil {
		return err
	}
	s.OnClose(func() {
		hp.Detach.Close()
		s.logf("host port of %s detached", m.Device)
	})
	s.logf("host port attached to %s", m.Device)
	rep.Set(&proto.AttachHostPortReply{MAC: hp.MAC, MTU: uint32(hp.MTU), Prefixes: hp.Prefixes[:min(len(hp.Prefixes), proto.MaxGIDs)]})
	return nil
}

// userHostPort: a host port puts the client's frames on the NIC's wire,
// with its MAC and addresses. Root (and the daemon's own user, who has the
// NIC anyway) may send what it likes there; another user's port is a
// user's (tapnic.NIC.AttachUserHostPort): it speaks only as the NIC and
// gets no connection to a privileged port, as the kernel would allow that
// user.
func userHostPort(client uint32, daemon int) bool {
	return client != 0 && int(client) != daemon
}
