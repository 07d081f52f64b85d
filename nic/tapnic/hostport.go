// A host port: the kernel's network behind a TAP of a client's (a program's
// view, its own network namespace) bridged with the NIC's wire, so that a
// program's kernel TCP, ping, DNS... reach the wire with the NIC's MAC and
// addresses while the NIC keeps RoCEv2 and its own TCP, as a host and its
// RNIC share one port.
//
//	                 ┌──────── classify (hostport_classify.go) ────────┐
//	wire ─► Host ──► │ NIC only ─► host stack (RoCE, own TCP, ARP/ND)  │
//	                 │ both ─────► host stack and host port            │
//	                 │ port only ► host port TAP ─► the view's kernel  │
//	                 └─────────────────────────────────────────────────┘
//	the view's kernel ─► host port TAP ─► fromPort ─► Host.WriteWire ─► wire
//
// Both directions move frames whole, behind their virtio_net_hdr when both
// TAPs have one (super-segments and partial checksums pass through for the
// kernels to finish), with no allocation per frame.

package tapnic

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/tap"
)

// HostPort is a TAP attached to the NIC as its host port. Close detaches
// it.
type HostPort struct {
	n    *NIC
	dev  *tap.Device
	cls  classifier
	cnt  portCounters
	done chan struct{} // closed when fromPort returns
	once sync.Once
	// noTSO: the NIC's TAP takes no super-segments while this port, which
	// has no virtio_net_hdr, is attached.
	noTSO bool
}

// AttachHostPort makes the TAP whose fd is f (IFF_TAP|IFF_NO_PI, with or
// without IFF_VNET_HDR; its other end should have the NIC's MAC and
// addresses) the NIC's host port, until the HostPort is closed or the NIC
// is. It takes f. A NIC has one host port at a time: a second attach fails
// with verbs.ErrBusy.
func (n *NIC) AttachHostPort(f *os.File) (*HostPort, error) {
	return n.attachHostPort(f, false)
}

// AttachUserHostPort is AttachHostPort for a TAP of a user other than
// root (hostport_user.go): it sends only as the NIC, and connections to
// the NIC's privileged ports do not reach it.
func (n *NIC) AttachUserHostPort(f *os.File) (*HostPort, error) {
	return n.attachHostPort(f, true)
}

func (n *NIC) attachHostPort(f *os.File, user bool) (*HostPort, error) {
	n.portMu.Lock()
	defer n.portMu.Unlock()
	if n.port != nil || n.closed {
		f.Close()
		if n.closed {
			return nil, fmt.Errorf("tapnic: %s: %w", n.Name(), verbs.ErrClosed)
		}
		return nil, fmt.Errorf("tapnic: %s has a host port already: %w", n.Name(), verbs.ErrBusy)
	}
	dev, err := tap.AdoptTAP(f, n.host.Offload())
	if err != nil {
		return nil, fmt.Errorf("tapnic: %s: host port: %w", n.Name(), errors.Join(err, verbs.ErrInvalid))
	}
	p := &HostPort{n: n, dev: dev, done: make(chan struct{}),
		cls: classifier{mac: n.host.MAC(), rocePort: wire.UDPPort, tcpOwns: n.tcp.Owns, user: user, privStart: privilegedPorts()}}
	for _, pr := range n.prefixes {
		if pr.Addr().Is4() {
			p.cls.addrs4 = append(p.cls.addrs4, pr.Addr())
		} else {
			p.cls.addrs6 = append(p.cls.addrs6, pr.Addr())
		}
	}
	if n.host.Offload() && !dev.Offload() {
		// The port takes no super-segments: the kernel must cut what it
		// hands the NIC's TAP, as it would for a NIC without TSO.
		if err := n.dev.SetRxTSO(false); err != nil {
			dev.Close()
			return nil, fmt.Errorf("tapnic: %s: host port: %w", n.Name(), err)
		}
		p.noTSO = true
	}
	n.port = p
	n.host.SetDivert(p.divert)
	go p.fromPort()
	return p, nil
}

// Name is the host port TAP's name (in its own namespace).
func (p *HostPort) Name() string { return p.dev.Name() }

// Close detaches the host port: the NIC takes every frame again, the TAP's
// fd is closed (the TAP stays its owner's) and its reader stopped.
func (p *HostPort) Close() error {
	var err error
	p.once.Do(func() {
		p.n.portMu.Lock()
		if p.n.port == p {
			p.n.host.SetDivert(nil)
			p.n.port = nil
			if p.noTSO {
				err = p.n.dev.SetRxTSO(true)
			}
		}
		p.n.portMu.Unlock()
		err = errors.Join(err, p.dev.Close())
		<-p.done
	})
	return err
}

// divert is the Host's Diverter: frames for the port are written to it.
func (p *HostPort) divert(frame []byte, v tap.VnetHdr) bool {
	switch p.cls.classify(frame) {
	case toNIC:
		return true
	case toBoth:
		p.cnt.both.Add(1)
		p.toPort(frame, v)
		return true
	}
	p.toPort(frame, v)
	return false
}

// toPort writes one frame from the wire to the host port; a failure (a
// detached or full TAP) loses the frame, as a congested port would.
func (p *HostPort) toPort(frame []byte, v tap.VnetHdr) {
	if err := p.dev.WriteAs(v, frame); err != nil {
		p.cnt.toPortErrors.Add(1)
		return
	}
	p.cnt.toPortFrames.Add(1)
	p.cnt.toPortBytes.Add(uint64(len(frame)))
}

// fromPort puts the host port's frames on the wire until the TAP's fd is
// closed. A frame whose source is not the NIC's MAC is dropped: answers to
// it would never reach the port.
func (p *HostPort) fromPort() {
	defer close(p.done)
	buf := make([]byte, tap.VnetHdrLen+tap.MaxFrame)
	mac := p.n.host.MAC()
	for {
		v, frame, err := p.dev.ReadAs(buf)
		if err != nil {
			return
		}
		if len(frame) < ethLen || [6]byte(frame[6:12]) != mac || (p.cls.user && !p.cls.mayOriginate(frame)) {
			p.cnt.foreignSource.Add(1)
			continue
		}
		if err := p.n.host.WriteWire(frame, v); err != nil {
			p.cnt.fromPortErrors.Add(1)
			continue
		}
		p.cnt.fromPortFrames.Add(1)
		p.cnt.fromPortBytes.Add(uint64(len(frame)))
	}
}

// closePort detaches the host port, if any, as the NIC closes.
func (n *NIC) closePort() {
	n.portMu.Lock()
	n.closed = true
	p := n.port
	n.portMu.Unlock()
	if p != nil {
		p.Close()
	}
}
