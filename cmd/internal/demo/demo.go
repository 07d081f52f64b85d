package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/verbs"
)

// Config describes a demo run: the links and addresses of two NICs.
type Config struct {
	LinkA, LinkB embedded.Link
	AddrA, AddrB netip.Addr
	MACA, MACB   [6]byte
	// PortA and PortB are the NICs' RoCEv2 UDP ports (4791 if zero); they
	// differ when the NICs share an address (IPv6 loopback).
	PortA, PortB uint16
	// MTU is the link MTU (1500 if zero: path MTU 1024).
	MTU int
	// Pcap, if set, records every frame between the two NICs (a tee on
	// rnic0's link sees both directions).
	Pcap *embedded.PcapWriter
	// Out receives the narration.
	Out io.Writer
	// Timeout bounds each step (2s if zero).
	Timeout time.Duration
	// TraceEvents, if set, receives both engines' trace events as they
	// happen (node is "rnic0" or "rnic1"), on the links above or the
	// TAPs; e.g. the timer expiries and RNR waits a ladder diagram marks.
	// It must be safe for concurrent use.
	TraceEvents func(node string, e embedded.TraceEvent)

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

// demo is a run of either transport's steps: two sides, the lines their
// recorder took from the wire, and the verdicts.
type demo struct {
	ctx context.Context
	// cfg is the RoCEv2 run's configuration; an iWARP run fills Out and
	// Timeout.
	cfg Config
	out io.Writer
	// rec records the RoCEv2 frames, srec the iWARP streams; wire is the
	// one of the run.
	rec      *recorder
	srec     *streamRecorder
	wire     interface{ take() []string }
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
	// conn is the side's iWARP connection; fmr its fast-register MR
	// (rnic1's, for SEND with invalidate).
	conn ibv.CMConn
	fmr  *nic.MR
	// shared (a local NIC's) or mem (another backend's) backs buf; it is
	// freed after the NIC closes.
	shared *memory.Shared
	mem    ibv.Buffer
}

const bufSize = 64 << 10

// step is one operation of a demo, told and checked.
type step struct {
	title, why string
	run        func() error
}

// runSteps runs the steps in order: each is told with the frames it
// caused, then its completions, then its verdict. On one device the
// sides' names replace rnic0 and rnic1 in the texts.
func (d *demo) runSteps(steps []step) error {
	final := d.out
	fmt.Fprintf(final, "\n")
	names := strings.NewReplacer("rnic0", d.a.name, "rnic1", d.b.name)
	for i, s := range steps {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(final, "== step %d: %s\n%s\n", i+1, s.title, wrap(names.Replace(s.why), 78))
		d.wire.take()
		var notes bytes.Buffer
		d.out = &notes // completions are told after the frames that caused them
		err := s.run()
		d.out = final
		d.tellWire()
		final.Write(notes.Bytes())
		if err != nil {
			d.failures = append(d.failures, fmt.Sprintf("step %d (%s): %v", i+1, s.title, err))
			fmt.Fprintf(final, "  FAILED: %v\n\n", err)
			continue
		}
		d.passed++
		fmt.Fprintf(final, "  ok\n\n")
	}
	fmt.Fprintf(final, "demo: %d steps, %d behaved as specified\n", len(steps), d.passed)
	if len(d.failures) > 0 {
		return fmt.Errorf("%w: %s", ErrFailed, strings.Join(d.failures, "; "))
	}
	return nil
}

// tellWire tells the frames recorded since the last take.
func (d *demo) tellWire() {
	for _, l := range d.wire.take() {
		fmt.Fprintf(d.out, "  wire: %s\n", l)
	}
}

// defaults fills the fields both transports share.
func defaults(out io.Writer, timeout time.Duration) (io.Writer, time.Duration) {
	if out == nil {
		out = io.Discard
	}
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	return out, timeout
}

// objects creates a side's objects on its device n (closed by closer, if
// the side owns it): memory, a PD, an MR over all of it and two CQs; qps,
// the transport's, adds the QPs and tells them. On an error the side is
// closed.
func (d *demo) objects(name string, n ibv.Device, closer io.Closer, addr netip.Addr, qps func(*side) error) (*side, error) {
	s := &side{name: name, dev: n, closer: closer, addr: addr}
	if err := s.create(); err != nil {
		s.close()
		return nil, err
	}
	if err := qps(s); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// create makes the side's objects below its QPs.
func (s *side) create() error {
	var err error
	n := s.dev
	if s.sgid, err = n.GIDIndex(s.addr); err != nil {
		return err
	}
	if err := s.alloc(); err != nil {
		return err
	}
	if s.pd, err = n.AllocPD(); err != nil {
		return err
	}
	// At address 0, as in shared memory every process maps: the
	// narration's addresses are offsets into the buffer.
	all := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if s.mr, err = n.RegMRIOVA(s.pd, s.buf, 0, all); err != nil {
		return err
	}
	if s.scq, err = n.CreateCQ(16); err != nil {
		return err
	}
	s.rcq, err = n.CreateCQ(16)
	return err
}

// alloc allocates the side's buffer. Registered memory is what the NIC
// writes into from its own goroutines; like DMA memory it lives outside
// the Go heap (memfd + mmap), where the race detector does not mistake
// the NIC's writes, ordered by the wire and the completion, for a data
// race. Another backend's NIC gives its own (rnicd's is shared memory
// too).
func (s *side) alloc() error {
	if nic.DeviceOf(s.dev) != nil {
		sh, err := memory.NewShared(bufSize)
		if err != nil {
			return err
		}
		s.buf, s.shared = sh.Bytes(), sh
		return nil
	}
	m, err := s.dev.AllocBuffer(bufSize)
	if err != nil {
		return err
	}
	s.buf, s.mem = m.Bytes(), m
	return nil
}

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
	if s.fmr != nil {
		nic.DeviceOf(s.dev).DeregMR(s.fmr)
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

// expectCompletion waits for the next completion on cq, tells it in words
// and checks it against want: the WR and status always, the opcode and
// byte count on success (a zero ByteLen in want is not checked).
func expectCompletion(ctx context.Context, out io.Writer, name string, cq ibv.CQ, want verbs.WC, timeout time.Duration) (verbs.WC, error) {
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
