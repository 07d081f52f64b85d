package demo

import (
	"fmt"
	"strings"
	"sync"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/embedded"
)

// streamRecorder wraps each iWARP connection and keeps a one-line
// description of every MPA frame and FPDU a NIC writes, in writing order
// across both NICs, the stream counterpart of recorder.
type streamRecorder struct {
	mu    sync.Mutex
	lines []string
}

// wrap returns a Conn that records what from writes to to over c.
func (r *streamRecorder) wrap(from, to string, c embedded.StreamConn) embedded.StreamConn {
	return &recordingConn{StreamConn: c, r: r, from: from, to: to}
}

// take returns and forgets the lines recorded so far.
func (r *streamRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.lines
	r.lines = nil
	return l
}

type recordingConn struct {
	embedded.StreamConn
	r        *streamRecorder
	from, to string

	mu     sync.Mutex
	pend   []byte
	seenMP bool // the MPA frame of this direction was seen
	broken bool
}

func (c *recordingConn) Write(b []byte) (int, error) {
	// The recorder's lock is held across the write (which never blocks
	// nor calls back), so the peer's answer, written only after these
	// bytes arrived, is recorded after them.
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.StreamConn.Write(b)
	if n > 0 && !c.broken {
		c.pend = append(c.pend, b[:n]...)
		c.parse()
	}
	return n, err
}

// parse describes every complete message at the start of pend.
func (c *recordingConn) parse() {
	for len(c.pend) > 0 {
		k := wire.MessageLen(c.pend)
		if k < 0 {
			c.broken = true
			c.add(fmt.Sprintf("%s -> %s  bytes that do not start an MPA message", c.from, c.to))
			return
		}
		if k == 0 || len(c.pend) < k {
			return
		}
		msg := c.pend[:k]
		var line string
		if !c.seenMP {
			c.seenMP = true
			line = describeMPA(c.from, c.to, msg)
		} else {
			line = describeFPDU(c.from, c.to, msg)
		}
		c.add(line)
		c.pend = c.pend[k:]
	}
}

// add records a line; c.r.mu is held.
func (c *recordingConn) add(line string) {
	c.r.lines = append(c.r.lines, line)
}

// describeMPA puts an MPA Request or Reply in words.
func describeMPA(from, to string, b []byte) string {
	f, _, err := wire.ParseMPAFrame(b)
	if err != nil {
		return fmt.Sprintf("%s -> %s  MPA frame that does not parse: %v", from, to, err)
	}
	var s strings.Builder
	kind := "MPA Request"
	if f.IsReply() {
		kind = "MPA Reply"
	}
	fmt.Fprintf(&s, "%s -> %s  %-28s rev=%d crc=%v markers=%v", from, to, kind, f.Rev(), f.CRC(), f.Markers())
	if f.Reject() {
		s.WriteString(" REJECT")
	}
	if f.HasIRDORD() {
		v := f.IRDORD()
		fmt.Fprintf(&s, " ird=%d ord=%d", v.IRD, v.ORD)
		var rtr []string
		if v.WriteRTR {
			rtr = append(rtr, "zero-length WRITE")
		}
		if v.ReadRTR {
			rtr = append(rtr, "zero-length READ")
		}
		if v.SendRTR {
			rtr = append(rtr, "zero-length SEND")
		}
		if v.PeerToPeer && len(rtr) > 0 {
			fmt.Fprintf(&s, " rtr=%s", strings.Join(rtr, "|"))
		}
	}
	if pd := f.ULPPrivateData(); len(pd) > 0 {
		fmt.Fprintf(&s, " private_data=%q", pd)
	}
	return s.String()
}

// describeFPDU puts one FPDU in words: opcode, the DDP fields (STag and
// TO, or QN, MSN and MO), the RDMAP header and the payload size.
func describeFPDU(from, to string, b []byte) string {
	f, _, err := wire.ParseFPDU(b)
	if err != nil {
		return fmt.Sprintf("%s -> %s  FPDU that does not parse: %v", from, to, err)
	}
	var seg wire.Segment
	if err := seg.Decode(f.ULPDU()); err != nil {
		return fmt.Sprintf("%s -> %s  DDP segment that does not decode: %v", from, to, err)
	}
	h := seg.DDP()
	var s strings.Builder
	name := seg.Opcode().String()
	if seg.Opcode() == wire.OpWrite && len(seg.Payload()) == 0 {
		name += " (zero-length: RTR)"
	} else if seg.Opcode() == wire.OpReadRequest {
		if rr := seg.ReadRequest(); rr.Size() == 0 {
			name += " (zero-length: RTR)"
		}
	}
	fmt.Fprintf(&s, "%s -> %s  %-28s", from, to, name)
	if h.Tagged() {
		fmt.Fprintf(&s, " stag=%#x to=%#x", h.STag(), h.TO())
	} else {
		fmt.Fprintf(&s, " qn=%d msn=%d mo=%d", h.QN(), h.MSN(), h.MO())
	}
	if h.Last() {
		s.WriteString(" L")
	}
	switch seg.Opcode() {
	case wire.OpSendInvalidate, wire.OpSendSEInvalidate:
		fmt.Fprintf(&s, " inval_stag=%#x", h.InvalidateSTag())
	case wire.OpReadRequest:
		rr := seg.ReadRequest()
		fmt.Fprintf(&s, " sink stag=%#x to=%#x size=%d source stag=%#x to=%#x",
			rr.SinkSTag(), rr.SinkTO(), rr.Size(), rr.SourceSTag(), rr.SourceTO())
	case wire.OpAtomicRequest:
		a := seg.AtomicRequest()
		fmt.Fprintf(&s, " %v id=%d stag=%#x to=%#x add/swap=%d compare=%d", a.Op(), a.RequestID(), a.STag(), a.TO(), a.AddSwapData(), a.CompareData())
	case wire.OpAtomicResponse:
		a := seg.AtomicResponse()
		fmt.Fprintf(&s, " id=%d original=%d", a.RequestID(), a.OriginalValue())
	case wire.OpTerminate:
		t := seg.Terminate()
		fmt.Fprintf(&s, " [%v, code %#04x]", t.Code(), uint16(t.Code()))
	case wire.OpImmediate, wire.OpImmediateSE:
		fmt.Fprintf(&s, " imm=%#x", seg.Immediate().Data())
	}
	if seg.Opcode() != wire.OpTerminate {
		if n := len(seg.Payload()); n > 0 {
			fmt.Fprintf(&s, " payload=%dB", n)
		}
	}
	return s.String()
}
