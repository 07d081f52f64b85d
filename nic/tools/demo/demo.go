package demo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"strings"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce"
	"github.com/rnic/rnic/transport"
)

// Config describes a demo run: the links and addresses of two NICs.
type Config struct {
	LinkA, LinkB transport.Endpoint
	AddrA, AddrB netip.Addr
	MACA, MACB   [6]byte
	// PortA and PortB are the NICs' RoCEv2 UDP ports (4791 if zero); they
	// differ when the NICs share an address (IPv6 loopback).
	PortA, PortB uint16
	// MTU is the link MTU (1500 if zero: path MTU 1024).
	MTU int
	// Pcap, if set, records every frame between the two NICs (a tee on
	// rnic0's link sees both directions).
	Pcap *transport.PcapWriter
	// Out receives the narration.
	Out io.Writer
	// Timeout bounds each step (2s if zero).
	Timeout time.Duration
	// TraceEvents, if set, receives both engines' trace events as they
	// happen (node is "rnic0" or "rnic1"), on the links above or the
	// TAPs; e.g. the timer expiries and RNR waits a ladder diagram marks.
	// It must be safe for concurrent use.
	TraceEvents func(node string, e roce.TraceEvent)

	// TAPA and TAPB, if set, run the demo in the TAP mode (nil: the
	// links above): rnic0 and rnic1 each own a TAP device, which the
	// caller has put on one bridge (or whose Bridge names one), and every
	// step crosses the real Ethernet between them, ARP or ND included.
	// Both must be set; Links, MACs and Ports are then unused. rnic1's
	// address is its first prefix, rnic0's its first of the same family
	// (AddrA and AddrB, if set, must be among them). Pcap records every
	// frame on rnic0's TAP. MTU is the TAPs' (each TAP config's own MTU
	// wins); it must allow path MTU 1024.
	TAPA, TAPB *tapnic.Config

	// Device, if set, runs the steps with both sides on it, any backend's
	// (ibv): two sets of objects on one NIC whose QPs talk to each other
	// through its port (loopback). Links, MACs, Ports, MTU and TAPs are
	// then unused; AddrA, if set, is the address both use (one of the
	// device's GIDs; zero takes its first). The frames are the device's
	// own: the narration shows no "wire:" lines (capture them at its
	// port) and Pcap is unused. Run closes the device.
	Device ibv.Device
}

// ErrConfig is wrapped by configuration errors.
var ErrConfig = errors.New("demo: bad configuration")

// ErrFailed is returned when a step did not behave as specified.
var ErrFailed = errors.New("demo: a step did not behave as specified")

type demo struct {
	ctx      context.Context
	cfg      Config
	out      io.Writer
	rec      *recorder
	a, b     *side
	passed   int
	failures []string
}

// side is one NIC (or, on one Config.Device, one half of it) with its
// objects.
type side struct {
	name string
	dev  ibv.Device
	// closer closes the NIC (and its TAP), nil for a side that does not
	// own its device; addr is the NIC's address the demo uses, sgid its
	// GID index.
	closer io.Closer
	addr   netip.Addr
	sgid   int
	pd     ibv.PD
	buf    []byte
	mr     ibv.MR
	scq    ibv.CQ
	rcq    ibv.CQ
	qp     ibv.QP
	psn    uint32
	ud     ibv.QP
	// shared (a local NIC's) or mem (another backend's) backs buf; it is
	// freed after the NIC closes.
	shared *memory.Shared
	mem    ibv.Buffer
}

const bufSize = 64 << 10

// Run performs the demo and returns nil only if every step behaved as the
// spec says. The NICs and links (or TAPs) are closed on return. Cancelling
// ctx ends the demo after the step in progress.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	d := &demo{ctx: ctx, cfg: cfg, out: cfg.Out, rec: newRecorder(cfg.PortA, cfg.PortB)}
	var err error
	if cfg.Device != nil {
		if err := d.openOnDevice(); err != nil {
			return err
		}
		defer cfg.Device.Close()
	} else if cfg.TAPA != nil || cfg.TAPB != nil {
		if err := d.openTAPs(); err != nil {
			return err
		}
	} else {
		if d.a, err = d.open("rnic0", cfg.LinkA, cfg.AddrA, cfg.MACA, cfg.PortA, cfg.PortB, cfg.Pcap); err != nil {
			return err
		}
		if d.b, err = d.open("rnic1", cfg.LinkB, cfg.AddrB, cfg.MACB, cfg.PortB, cfg.PortA, nil); err != nil {
			d.a.close()
			return err
		}
	}
	defer d.a.close()
	defer d.b.close()
	if err := d.connect(); err != nil {
		return err
	}
	steps := []struct {
		title, why string
		run        func() error
	}{
		{"SEND", "A SEND consumes a receive WQE that rnic1 posted beforehand. The last (here: only) packet asks for an ACK (ackreq); rnic1 answers with an Acknowledge whose MSN counts the messages it has completed.", d.send},
		{"SEND with immediate", "The 32-bit immediate travels in an ImmDt header and shows up in rnic1's receive completion.", d.sendImm},
		{"RDMA WRITE", "10000 bytes at path MTU 1024 become WRITE First, Middles and Last. Only the First carries the RETH (address, rkey, length); the PSNs count up; one ACK for the Last acknowledges all of them. rnic1's CPU sees no completion: the data just lands.", d.write},
		{"RDMA WRITE with immediate", "Like a WRITE, but the immediate consumes a receive WQE at rnic1, so rnic1 gets a RECV_RDMA_WITH_IMM completion.", d.writeImm},
		{"RDMA READ", "The READ request carries no data but reserves one PSN per response packet. rnic1 answers with READ Response First/Middle/Last, which also acknowledge the request: no separate ACK.", d.read},
		{"atomics", "CmpSwap and FetchAdd act on an 8-byte word in rnic1's memory and return the value it had before, in an ATOMIC Acknowledge.", d.atomics},
		{"UD SEND", "Unreliable datagram: no connection, every SEND names its destination (address handle, QPN, Q_Key) in a DETH, and nothing is acknowledged. The receive buffer starts with a 40-byte GRH area holding the sender's IP header.", d.ud},
		{"error: bad rkey", "A WRITE with an rkey rnic1 never handed out: rnic1 checks the key before a byte moves, answers NAK (remote access error) and moves its QP to ERR; rnic0 completes the WR with REM_ACCESS_ERR and moves its QP to ERR too.", d.badRKey},
	}
	fmt.Fprintf(d.out, "\n")
	// On one device the sides have the device's name and a letter.
	names := strings.NewReplacer("rnic0", d.a.name, "rnic1", d.b.name)
	for i, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(d.out, "== step %d: %s\n%s\n", i+1, s.title, wrap(names.Replace(s.why), 78))
		d.rec.take()
		var notes bytes.Buffer
		d.out = &notes // completions are told after the frames that caused them
		err := s.run()
		d.out = cfg.Out
		for _, l := range d.rec.take() {
			fmt.Fprintf(d.out, "  wire: %s\n", l)
		}
		d.out.Write(notes.Bytes())
		if err != nil {
			d.failures = append(d.failures, fmt.Sprintf("step %d (%s): %v", i+1, s.title, err))
			fmt.Fprintf(d.out, "  FAILED: %v\n\n", err)
			continue
		}
		d.passed++
		fmt.Fprintf(d.out, "  ok\n\n")
	}
	fmt.Fprintf(d.out, "demo: %d steps, %d behaved as specified\n", len(steps), d.passed)
	if len(d.failures) > 0 {
		return fmt.Errorf("%w: %s", ErrFailed, strings.Join(d.failures, "; "))
	}
	return nil
}

func (d *demo) open(name string, link transport.Endpoint, addr netip.Addr, mac [6]byte, port, peerPort uint16, pcap *transport.PcapWriter) (*side, error) {
	macs := map[netip.Addr][6]byte{d.cfg.AddrA: d.cfg.MACA, d.cfg.AddrB: d.cfg.MACB}
	n, err := embedded.NewNIC(embedded.Config{Name: name, Addr: addr, MAC: mac, MTU: d.cfg.MTU, Pcap: pcap,
		Link:        d.rec.wrap(name, mac, link),
		Resolve:     func(a netip.Addr) ([6]byte, bool) { m, ok := macs[a]; return m, ok },
		UDPPort:     port,
		PeerPort:    func(netip.Addr) uint16 { return peerPort },
		TraceEvents: d.traceEvents(name)})
	if err != nil {
		return nil, err
	}
	dev := n.Verbs(ibv.LocalOptions{})
	return d.objects(name, dev, dev, addr)
}

// traceEvents is the NIC name's hook for Config.TraceEvents (nil: none).
func (d *demo) traceEvents(name string) func(roce.TraceEvent) {
	te := d.cfg.TraceEvents
	if te == nil {
		return nil
	}
	return func(e roce.TraceEvent) { te(name, e) }
}

// openOnDevice puts both sides on Config.Device, at its address AddrA or
// its first.
func (d *demo) openOnDevice() error {
	dev := d.cfg.Device
	addr, err := deviceAddr(dev, d.cfg.AddrA)
	if err != nil {
		dev.Close()
		return err
	}
	fmt.Fprintf(d.out, "both sides on device %s: %s/A and %s/B are two sets of objects whose QPs talk through its port;\n"+
		"its frames are its own, so no \"wire:\" lines follow (capture them at its port)\n", dev.Name(), dev.Name(), dev.Name())
	if d.a, err = d.objects(dev.Name()+"/A", dev, nil, addr); err != nil {
		dev.Close()
		return err
	}
	if d.b, err = d.objects(dev.Name()+"/B", dev, nil, addr); err != nil {
		d.a.close()
		dev.Close()
		return err
	}
	return nil
}

// deviceAddr is want if dev has a GID of it, or with want zero the first
// address in dev's GID table.
func deviceAddr(dev ibv.Device, want netip.Addr) (netip.Addr, error) {
	for _, g := range dev.GIDs() {
		a := g.Unmap()
		if want.IsValid() && a == want.Unmap() || !want.IsValid() && a.IsValid() && !a.IsUnspecified() && !a.IsLinkLocalUnicast() {
			return a, nil
		}
	}
	if want.IsValid() {
		return want, fmt.Errorf("%w: %v is not in device %s's GID table %v", ErrConfig, want, dev.Name(), dev.GIDs())
	}
	return want, fmt.Errorf("%w: device %s has no IP address in its GID table %v", ErrConfig, dev.Name(), dev.GIDs())
}

// objects creates a side's objects on its device n (closed by closer, if
// the side owns it) and tells them.
func (d *demo) objects(name string, n ibv.Device, closer io.Closer, addr netip.Addr) (*side, error) {
	s := &side{name: name, dev: n, closer: closer, addr: addr}
	var err error
	if s.sgid, err = n.GIDIndex(addr); err != nil {
		s.close()
		return nil, err
	}
	// Registered memory is what the NIC writes into from its own
	// goroutines; like DMA memory it lives outside the Go heap (memfd +
	// mmap), where the race detector does not mistake the NIC's writes,
	// ordered by the wire and the completion, for a data race. Another
	// backend's NIC gives its own (rnicd's is shared memory too).
	if ibv.LocalNIC(n) != nil {
		sh, err := memory.NewShared(bufSize)
		if err != nil {
			s.close()
			return nil, err
		}
		s.buf, s.shared = sh.Bytes(), sh
	} else {
		m, err := n.AllocBuffer(bufSize)
		if err != nil {
			s.close()
			return nil, err
		}
		s.buf, s.mem = m.Bytes(), m
	}
	if s.pd, err = n.AllocPD(); err != nil {
		s.close()
		return nil, err
	}
	// At address 0, as in shared memory every process maps: the
	// narration's addresses are offsets into the buffer.
	all := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if s.mr, err = n.RegMRIOVA(s.pd, s.buf, 0, all); err != nil {
		s.close()
		return nil, err
	}
	if s.scq, err = n.CreateCQ(16); err != nil {
		s.close()
		return nil, err
	}
	if s.rcq, err = n.CreateCQ(16); err != nil {
		s.close()
		return nil, err
	}
	cp := verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 64}
	if s.qp, err = n.CreateQP(s.pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: s.scq, RecvCQ: s.rcq, Cap: cp}); err != nil {
		s.close()
		return nil, err
	}
	if s.ud, err = n.CreateQP(s.pd, ibv.QPInit{Type: verbs.QPTypeUD, SendCQ: s.scq, RecvCQ: s.rcq, Cap: cp}); err != nil {
		s.close()
		return nil, err
	}
	s.psn = rand.Uint32() & 0xFFFFFF
	fmt.Fprintf(d.out, "%s: address %v (RoCEv2 GID %v), RC QP %#06x, UD QP %#06x, memory region rkey %#x at %#x\n",
		name, addr, nic.GIDFromAddr(addr), s.qp.QPN(), s.ud.QPN(), s.mr.RKey(), s.mr.Addr())
	return s, nil
}

// connect takes both RC QPs through RESET → INIT → RTR → RTS with each
// other's QPN and starting PSN, as an out-of-band exchange would.
func (d *demo) connect() error {
	all := memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	for _, p := range [][2]*side{{d.a, d.b}, {d.b, d.a}} {
		me, peer := p[0], p[1]
		if err := me.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: all},
			verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
			return err
		}
		rtr := verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: peer.qp.QPN(), RQPSN: peer.psn,
			MaxDestRdAtomic: 1, MinRNRTimer: 12,
			AV: verbs.AddressVector{DGID: nic.GIDFromAddr(peer.addr), HopLimit: 64, PortNum: 1, SGIDIndex: uint8(me.sgid)}}
		if err := me.qp.Modify(&rtr, verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|
			verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
			return err
		}
		rts := verbs.QPAttr{State: verbs.QPSRTS, SQPSN: me.psn, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1}
		if err := me.qp.Modify(&rts, verbs.AttrState|verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|
			verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic); err != nil {
			return err
		}
		// UD: no peer, just a Q_Key.
		if err := me.ud.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, QKey: udQKey},
			verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrQKey); err != nil {
			return err
		}
		if err := me.ud.Modify(&verbs.QPAttr{State: verbs.QPSRTR}, verbs.AttrState); err != nil {
			return err
		}
		if err := me.ud.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: me.psn}, verbs.AttrState|verbs.AttrSQPSN); err != nil {
			return err
		}
	}
	fmt.Fprintf(d.out, "connected: %s QP %#06x sends from PSN %d, %s QP %#06x from PSN %d; both RESET -> INIT -> RTR -> RTS\n",
		d.a.name, d.a.qp.QPN(), d.a.psn, d.b.name, d.b.qp.QPN(), d.b.psn)
	return nil
}

const udQKey = 0x11111111

// close closes the NIC, then frees its memory. A side that does not own
// its device destroys its objects instead: the device goes on.
func (s *side) close() {
	if s.closer != nil {
		s.closer.Close()
	} else {
		for _, qp := range []ibv.QP{s.qp, s.ud} {
			if qp != nil {
				qp.Destroy()
			}
		}
		for _, cq := range []ibv.CQ{s.scq, s.rcq} {
			if cq != nil {
				cq.Destroy()
			}
		}
	}
	if s.mr != nil {
		s.mr.Dereg()
	}
	if s.closer == nil && s.pd != nil {
		s.pd.Dealloc()
	}
	if s.shared != nil {
		s.shared.Close()
	}
	if s.mem != nil {
		s.mem.Close()
	}
}

func (s *side) sge(off, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: s.mr.Addr() + uint64(off), Length: uint32(n), LKey: s.mr.LKey()}}
}

func (s *side) va(off int) uint64 { return s.mr.Addr() + uint64(off) }

// expect checks one completion and narrates it.
func (d *demo) expect(s *side, cq ibv.CQ, want verbs.WC) (verbs.WC, error) {
	return expectCompletion(d.ctx, d.out, s.name, cq, want, d.cfg.Timeout)
}

// poller is a CQ: ibv's, or over iWARP nic's.
type poller interface{ Poll(wcs []verbs.WC) int }

// expectCompletion waits for the next completion on cq, tells it in words
// and checks it against want: the WR and status always, the opcode and
// byte count on success (a zero ByteLen in want is not checked).
func expectCompletion(ctx context.Context, out io.Writer, name string, cq poller, want verbs.WC, timeout time.Duration) (verbs.WC, error) {
	buf := make([]verbs.WC, 1)
	for deadline := time.Now().Add(timeout); cq.Poll(buf) == 0; {
		if err := ctx.Err(); err != nil {
			return verbs.WC{}, err
		}
		if time.Now().After(deadline) {
			return verbs.WC{}, fmt.Errorf("%s: no completion after %v", name, timeout)
		}
		time.Sleep(50 * time.Microsecond)
	}
	wc := buf[0]
	fmt.Fprintf(out, "  completion at %s: wr_id=%d %v %v byte_len=%d", name, wc.WRID, wc.Opcode, wc.Status, wc.ByteLen)
	if wc.Flags&verbs.WCFlagWithImm != 0 {
		fmt.Fprintf(out, " imm=%#x", wc.Imm)
	}
	if wc.Flags&verbs.WCFlagWithInv != 0 {
		fmt.Fprintf(out, " invalidated_stag=%#x", wc.InvRKey)
	}
	if wc.SrcQP != 0 {
		fmt.Fprintf(out, " src_qp=%#06x", wc.SrcQP)
	}
	fmt.Fprintln(out)
	if wc.WRID != want.WRID || wc.Status != want.Status {
		return wc, fmt.Errorf("%s: completion wr_id=%d %v, want wr_id=%d %v", name, wc.WRID, wc.Status, want.WRID, want.Status)
	}
	if want.Status == verbs.WCSuccess && (wc.Opcode != want.Opcode || want.ByteLen != 0 && wc.ByteLen != want.ByteLen) {
		return wc, fmt.Errorf("%s: completion %v byte_len %d, want %v byte_len %d", name, wc.Opcode, wc.ByteLen, want.Opcode, want.ByteLen)
	}
	return wc, nil
}

func (d *demo) post(s *side, wr verbs.SendWR) error {
	wr.Flags |= verbs.SendSignaled
	return s.qp.PostSend(&wr)
}

func (d *demo) send() error {
	a, b := d.a, d.b
	msg := []byte("Hello from rnic0: this is a SEND over RoCEv2, 64 bytes long....")
	copy(a.buf, msg)
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 100, SGL: b.sge(0x100, 256)}); err != nil {
		return err
	}
	if err := d.post(a, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: a.sge(0, len(msg))}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 1, Opcode: verbs.WCSend}); err != nil {
		return err
	}
	if _, err := d.expect(b, b.rcq, verbs.WC{WRID: 100, Opcode: verbs.WCRecv, ByteLen: uint32(len(msg))}); err != nil {
		return err
	}
	if !bytes.Equal(b.buf[0x100:0x100+len(msg)], msg) {
		return errors.New("the received bytes differ")
	}
	fmt.Fprintf(d.out, "  %s received: %q\n", b.name, b.buf[0x100:0x100+len(msg)])
	return nil
}

func (d *demo) sendImm() error {
	a, b := d.a, d.b
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 101, SGL: b.sge(0x200, 256)}); err != nil {
		return err
	}
	if err := d.post(a, verbs.SendWR{ID: 2, Opcode: verbs.WRSendWithImm, Imm: 0x1234, SGL: a.sge(0, 32)}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 2, Opcode: verbs.WCSend}); err != nil {
		return err
	}
	wc, err := d.expect(b, b.rcq, verbs.WC{WRID: 101, Opcode: verbs.WCRecv, ByteLen: 32})
	if err != nil {
		return err
	}
	if wc.Flags&verbs.WCFlagWithImm == 0 || wc.Imm != 0x1234 {
		return fmt.Errorf("immediate %#x (flags %v), want 0x1234", wc.Imm, wc.Flags)
	}
	return nil
}

func (d *demo) write() error {
	a, b := d.a, d.b
	for i := 0; i < 10000; i++ {
		a.buf[0x1000+i] = byte(i * 7)
	}
	if err := d.post(a, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMAWrite, SGL: a.sge(0x1000, 10000),
		RemoteAddr: b.va(0x4000), RKey: b.mr.RKey()}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 3, Opcode: verbs.WCRDMAWrite}); err != nil {
		return err
	}
	if !bytes.Equal(b.buf[0x4000:0x4000+10000], a.buf[0x1000:0x1000+10000]) {
		return errors.New("the written bytes differ")
	}
	fmt.Fprintf(d.out, "  %s's memory at %#x now holds %s's 10000 bytes\n", b.name, b.va(0x4000), a.name)
	return nil
}

func (d *demo) writeImm() error {
	a, b := d.a, d.b
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 102, SGL: b.sge(0x300, 16)}); err != nil {
		return err
	}
	if err := d.post(a, verbs.SendWR{ID: 4, Opcode: verbs.WRRDMAWriteWithImm, Imm: 0xC0FFEE, SGL: a.sge(0x1000, 100),
		RemoteAddr: b.va(0x7000), RKey: b.mr.RKey()}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 4, Opcode: verbs.WCRDMAWrite}); err != nil {
		return err
	}
	wc, err := d.expect(b, b.rcq, verbs.WC{WRID: 102, Opcode: verbs.WCRecvRDMAWithImm, ByteLen: 100})
	if err != nil {
		return err
	}
	if wc.Imm != 0xC0FFEE || !bytes.Equal(b.buf[0x7000:0x7000+100], a.buf[0x1000:0x1000+100]) {
		return errors.New("immediate or data differ")
	}
	return nil
}

func (d *demo) read() error {
	a, b := d.a, d.b
	for i := 0; i < 5000; i++ {
		b.buf[0x8000+i] = byte(255 - i)
	}
	if err := d.post(a, verbs.SendWR{ID: 5, Opcode: verbs.WRRDMARead, SGL: a.sge(0x6000, 5000),
		RemoteAddr: b.va(0x8000), RKey: b.mr.RKey()}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 5, Opcode: verbs.WCRDMARead, ByteLen: 5000}); err != nil {
		return err
	}
	if !bytes.Equal(a.buf[0x6000:0x6000+5000], b.buf[0x8000:0x8000+5000]) {
		return errors.New("the bytes read differ")
	}
	return nil
}

func (d *demo) atomics() error {
	a, b := d.a, d.b
	binary.NativeEndian.PutUint64(b.buf[0xF000:], 0)
	if err := d.post(a, verbs.SendWR{ID: 6, Opcode: verbs.WRAtomicCmpSwp, SGL: a.sge(0xE000, 8),
		RemoteAddr: b.va(0xF000), RKey: b.mr.RKey(), CompareAdd: 0, Swap: 42}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 6, Opcode: verbs.WCCompSwap}); err != nil {
		return err
	}
	if err := d.post(a, verbs.SendWR{ID: 7, Opcode: verbs.WRAtomicFetchAdd, SGL: a.sge(0xE008, 8),
		RemoteAddr: b.va(0xF000), RKey: b.mr.RKey(), CompareAdd: 8}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 7, Opcode: verbs.WCFetchAdd}); err != nil {
		return err
	}
	o1, o2 := binary.NativeEndian.Uint64(a.buf[0xE000:]), binary.NativeEndian.Uint64(a.buf[0xE008:])
	v := binary.NativeEndian.Uint64(b.buf[0xF000:])
	fmt.Fprintf(d.out, "  CmpSwap(compare 0, swap 42) returned %d; FetchAdd(+8) returned %d; the word is now %d\n", o1, o2, v)
	if o1 != 0 || o2 != 42 || v != 50 {
		return fmt.Errorf("returned %d and %d, word %d; want 0, 42, 50", o1, o2, v)
	}
	return nil
}

func (d *demo) ud() error {
	a, b := d.a, d.b
	msg := []byte("a datagram for UD QP")
	copy(a.buf[0x9000:], msg)
	if err := b.ud.PostRecv(&verbs.RecvWR{ID: 103, SGL: b.sge(0xA000, 40+256)}); err != nil {
		return err
	}
	ah, err := a.dev.CreateAH(a.pd, verbs.AddressVector{DGID: nic.GIDFromAddr(b.addr), HopLimit: 64, PortNum: 1, SGIDIndex: uint8(a.sgid)})
	if err != nil {
		return err
	}
	defer ah.Destroy()
	wr := verbs.SendWR{ID: 8, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: a.sge(0x9000, len(msg)),
		AH: ah.AV(), RemoteQPN: b.ud.QPN(), RemoteQKey: udQKey}
	if err := a.ud.PostSend(&wr); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 8, Opcode: verbs.WCSend}); err != nil {
		return err
	}
	wc, err := d.expect(b, b.rcq, verbs.WC{WRID: 103, Opcode: verbs.WCRecv, ByteLen: uint32(40 + len(msg))})
	if err != nil {
		return err
	}
	if wc.SrcQP != a.ud.QPN() || !bytes.Equal(b.buf[0xA000+40:0xA000+40+len(msg)], msg) {
		return errors.New("source QP or data differ")
	}
	fmt.Fprintf(d.out, "  the first 40 bytes of the buffer hold the GRH area (20 zero bytes, then %s's IPv4 header); the message follows: %q\n",
		a.name, b.buf[0xA000+40:0xA000+40+len(msg)])
	return nil
}

func (d *demo) badRKey() error {
	a, b := d.a, d.b
	bad := b.mr.RKey() ^ 0xFF
	if err := d.post(a, verbs.SendWR{ID: 9, Opcode: verbs.WRRDMAWrite, SGL: a.sge(0, 64), RemoteAddr: b.va(0), RKey: bad}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 9, Status: verbs.WCRemAccessErr}); err != nil {
		return err
	}
	deadline := time.Now().Add(d.cfg.Timeout)
	for b.qp.State() != verbs.QPSErr && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	fmt.Fprintf(d.out, "  QP states now: %s %v, %s %v\n", a.name, a.qp.State(), b.name, b.qp.State())
	if a.qp.State() != verbs.QPSErr || b.qp.State() != verbs.QPSErr {
		return errors.New("both QPs should be in ERR")
	}
	return nil
}

// wrap folds text at width columns.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		if n > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
