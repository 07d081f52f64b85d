package roce

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/rnic/rnic/roce/wire"
)

// The General Services Interface: QP1, the UD QP that carries management
// datagrams (MADs) of the GSI classes, the communication manager's among
// them (IBTA Vol 1 §13.5.1, §13.4.2). On RoCEv2 it is an ordinary UD SEND
// Only packet addressed to destination QP 1 (Annex A17):
//
//	BTH (opcode 0x64, DestQP 1, AckReq set as rxe does) | DETH (Q_Key
//	0x80010000, SrcQP 1) | 256-byte MAD | ICRC
//
// QP1 is special: nic never hands out QPNs 0 and 1 (they are no verbs
// QPs), every port has one, its Q_Key is the well-known GSI Q_Key
// (C13-13: a GSI datagram carrying another Q_Key is dropped), and it
// accepts any P_Key of the port's P_Key table (here the one entry 0xFFFF,
// as in rxe's table). The Stack therefore does
// not create it through verbs: a management agent (the CM in roce/cm)
// attaches a handler with SetGSIHandler and sends with SendGSI.

// GSI numbers.
const (
	// GSIQPN is the QP number of the GSI (QP1).
	GSIQPN = 1
	// GSIQKey is the well-known Q_Key of QP1 (IBTA §13.5.1.2, C13-13).
	GSIQKey = 0x80010000
	// MADLen is the size of a (non-RMPP) MAD.
	MADLen = 256
)

// ErrGSI is wrapped by SendGSI's errors.
var ErrGSI = errors.New("roce: GSI")

// GSIDatagram is a MAD that arrived on QP1. Its slices and the struct itself
// are only valid during the handler call: a handler that keeps the MAD
// copies it.
type GSIDatagram struct {
	// Src and Dst are the IP addresses of the packet (an IPv4 address in
	// its 4-byte form): Src is where an answer goes, Dst the local
	// address the sender used.
	Src, Dst netip.Addr
	// SrcQP is the sender's QP (1 for a GSI peer).
	SrcQP uint32
	// PKey is the packet's P_Key; PKeyIndex its index in the port's table.
	PKey      uint16
	PKeyIndex uint16
	// MAD is the datagram's payload: MADLen bytes from a conforming peer.
	MAD []byte
}

// GSIHandler receives the MADs that arrive on QP1. It runs on the link's
// receive path: it must not block (nor send and wait for an answer) and
// must copy what it keeps.
type GSIHandler func(*GSIDatagram)

// GSISend describes one MAD to send from QP1.
type GSISend struct {
	// Dst is the peer's IP address (or IPv4-mapped GID).
	Dst netip.Addr
	// Src, if valid, is the local address to send from; otherwise the
	// first local address of Dst's family.
	Src netip.Addr
	// DestQP is the destination QP (GSIQPN for a peer's GSI); Q_Key is
	// always GSIQKey.
	DestQP uint32
	// PKeyIndex selects the P_Key from the port's table (only index 0).
	PKeyIndex uint16
	// MAD is the datagram, normally MADLen bytes.
	MAD []byte
}

// gsi is QP1's send side state; its receive side is the handler.
type gsi struct {
	mu      sync.Mutex
	handler GSIHandler
	psn     uint32
	buf     []byte
}

// SetGSIHandler attaches the management agent that receives QP1's MADs;
// nil detaches it (MADs are then dropped and counted as NoQP, as for a
// port without a GSI agent).
func (s *Stack) SetGSIHandler(h GSIHandler) {
	s.gsi.mu.Lock()
	s.gsi.handler = h
	s.gsi.mu.Unlock()
}

// gsiInput delivers a packet for QP1 (the frame's ICRC, address and P_Key
// are already checked).
func (s *Stack) gsiInput(f *wire.Frame) {
	p := &f.Packet
	if p.Opcode() != wire.UDSendOnly {
		// QP1 is a UD QP: only SEND Only (without immediate: a MAD has
		// none) is valid for it.
		s.ctr.inc(UnexpectedOpcode)
		return
	}
	deth := p.DETH()
	if deth.QKey() != GSIQKey {
		s.ctr.inc(QKeyViolation)
		return
	}
	s.gsi.mu.Lock()
	h := s.gsi.handler
	s.gsi.mu.Unlock()
	if h == nil {
		s.ctr.inc(NoQP)
		return
	}
	s.ctr.inc(GSIRcvdMADs)
	d := GSIDatagram{Src: f.SrcAddr().Unmap(), Dst: f.DstAddr().Unmap(), SrcQP: deth.SrcQP(),
		PKey: p.BTH().PKey(), MAD: p.Payload()}
	h(&d)
}

// SendGSI sends one MAD from QP1 as a UD SEND Only, built as rxe builds
// its GSI packets: AckReq set, a PSN counting the port's GSI packets, the
// IPv4 ID counting too, TTL 64, the UDP source port of QP1.
func (s *Stack) SendGSI(m *GSISend) error {
	if m.PKeyIndex != 0 {
		return fmt.Errorf("%w: P_Key index %d: the table has one entry", ErrGSI, m.PKeyIndex)
	}
	if len(m.MAD) > MADLen || m.DestQP > wire.PSNMask {
		return fmt.Errorf("%w: %d-byte MAD to QP %#x", ErrGSI, len(m.MAD), m.DestQP)
	}
	dst := m.Dst.Unmap()
	src := m.Src.Unmap()
	if !src.IsValid() {
		for _, a := range s.cfg.Addrs {
			if a.Unmap().Is4() == dst.Is4() {
				src = a.Unmap()
				break
			}
		}
	}
	if !dst.IsValid() || !src.IsValid() || src.Is4() != dst.Is4() || !s.isLocal(src) {
		return fmt.Errorf("%w: no route from %v to %v", ErrGSI, src, dst)
	}
	e := wire.Encap{SrcMAC: s.cfg.MAC, Src: src, Dst: dst, TTL: 64, DF: true,
		SrcPort: SourcePort(GSIQPN), DstPort: s.cfg.UDPPort}
	if s.cfg.PeerPort != nil {
		if p := s.cfg.PeerPort(dst); p != 0 {
			e.DstPort = p
		}
	}
	e.DstMAC = [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	if s.cfg.Resolve != nil {
		if mac, ok := s.cfg.Resolve(dst); ok {
			e.DstMAC = mac
		}
	}
	g := &s.gsi
	g.mu.Lock()
	defer g.mu.Unlock()
	// IPv4 ID 0 with DF, as every frame of the RC engine: the embedded
	// mode's kernel sockets send exactly that (an unconnected socket with
	// IP_PMTUDISC_DO), and a frame with DF set is never fragmented, so the
	// ID identifies nothing. rxe counts its IDs up; receivers ignore them.
	e.IPID = 0
	h := wire.Headers{
		BTH:  wire.BTHFields{Opcode: wire.UDSendOnly, PKey: wire.DefaultPKey, DestQP: m.DestQP, AckReq: true, PSN: g.psn},
		DETH: wire.DETHFields{QKey: GSIQKey, SrcQP: GSIQPN},
	}
	g.buf = wire.AppendFrame(g.buf[:0], &e, &h, m.MAD)
	if err := s.cfg.Link.Send(g.buf); err != nil {
		return fmt.Errorf("%w: %w", ErrGSI, err)
	}
	g.psn = (g.psn + 1) & wire.PSNMask
	s.ctr.inc(SentPkts)
	s.ctr.inc(GSISentMADs)
	return nil
}
