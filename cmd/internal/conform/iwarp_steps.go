// The steps iWARP cases are written with: segments the tester sends on
// its TCP connection and what it expects of the DUT's stream. The DUT's
// side uses the common steps (Post, PostRecv, Poll, QPState, Memory,
// WriteMem).

package conform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
)

func iwContext(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// IW is an iWARP step: f runs with the case's session.
type IW struct {
	Name string
	F    func(s *iwSession) error
}

func (w IW) Do(r *Run) error {
	s, err := iw(r)
	if err != nil {
		return err
	}
	return w.F(s)
}

func (w IW) String() string { return w.Name }

// Header builders for the tester's segments.

func iwWriteHdr(stag uint32, to uint64, last bool) wire.Headers {
	return wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpWrite, Tagged: true, Last: last, STag: stag, TO: to}}
}

func iwSendHdr(op wire.Opcode, qn, msn, mo uint32, last bool) wire.Headers {
	return wire.Headers{DDP: wire.DDPFields{Opcode: op, Last: last, QN: qn, MSN: msn, MO: mo}}
}

// send is a one-segment message of op on queue 0 with the next MSN.
func (s *iwSession) send(op wire.Opcode) wire.Headers {
	return iwSendHdr(op, wire.QNSend, s.nextMSN(wire.QNSend), 0, true)
}

// readReqHdr is an RDMA Read Request with the next queue-1 MSN.
func (s *iwSession) readReqHdr(iwSinkSTag uint32, iwSinkTO uint64, size uint32, srcSTag uint32, srcTO uint64) wire.Headers {
	h := iwSendHdr(wire.OpReadRequest, wire.QNReadRequest, s.nextMSN(wire.QNReadRequest), 0, true)
	h.ReadRequest = wire.ReadRequestFields{SinkSTag: iwSinkSTag, SinkTO: iwSinkTO, Size: size, SourceSTag: srcSTag, SourceTO: srcTO}
	return h
}

// mr is the DUT's buffer.
func (s *iwSession) mr() (rkey uint32, addr uint64) {
	m := s.r.MR(DefaultMR)
	return m.RKey, m.Addr
}

// badKey is an STag the DUT never handed out.
func (s *iwSession) badKey() uint32 { k, _ := s.mr(); return k ^ 0x5A5A5A00 }

func iwRKeyOf(s *iwSession) uint32 { k, _ := s.mr(); return k }

// IWSend sends the segment mk builds, misframed as tx says.
func IWSend(name string, mk func(s *iwSession) (wire.Headers, []byte), tx iwport.Tx) IW {
	return IW{"send " + name, func(s *iwSession) error {
		h, payload := mk(s)
		sent, err := s.port.SendSegment(&h, payload, tx)
		if err != nil {
			return err
		}
		s.lastSent = sent
		s.r.Note("#%d→ %s", sent.Frame, name)
		return nil
	}}
}

// IWSendRaw sends a ULPDU given as octets (headers wire does not build).
func IWSendRaw(name string, mk func(s *iwSession) []byte) IW {
	return IW{"send " + name, func(s *iwSession) error {
		sent, err := s.port.SendULPDU(mk(s), iwport.Tx{})
		if err != nil {
			return err
		}
		s.lastSent = sent
		s.r.Note("#%d→ %s", sent.Frame, name)
		return nil
	}}
}

// HdrRule says which offending headers a Terminate must carry (RFC 5040
// §4.8).
type HdrRule uint8

// Header rules.
const (
	// HdrAny checks nothing about them.
	HdrAny HdrRule = iota
	// HdrDDP: D set, with the DDP header of the tester's last segment,
	// octet for octet.
	HdrDDP
	// HdrDDPRDMA: HdrDDP, and R set with that segment's RDMAP header (a
	// Read or Atomic Request).
	HdrDDPRDMA
)

// ExpectTerminate waits for the DUT's Terminate and checks its code (one
// of codes) and the headers rule demands.
func ExpectTerminate(rule HdrRule, codes ...wire.TermCode) IW {
	return IW{"expect Terminate " + iwCodeList(codes), func(s *iwSession) error {
		fr, err := s.recvTerminate()
		if err != nil {
			return err
		}
		return s.judgeTerminate(fr, func(fr *iwport.Frame) error { return s.checkTerminate(fr, rule, codes) })
	}}
}

// recvTerminate waits for the DUT's Terminate, noting what came before.
// The Terminate may not decode: judgeTerminate reads it for a rule.
func (s *iwSession) recvTerminate() (*iwport.Frame, error) {
	fr, skipped, err := s.port.RecvUntil(s.wait(), func(f *iwport.Frame) bool { return f.Opcode() == wire.OpTerminate })
	for _, f := range skipped {
		s.r.Note("%v", f)
	}
	if err != nil {
		return nil, fmt.Errorf("no Terminate from the DUT: %w", err)
	}
	s.r.Note("%v", fr)
	return fr, nil
}

func (s *iwSession) checkTerminate(fr *iwport.Frame, rule HdrRule, codes []wire.TermCode) error {
	t := fr.Term
	ok := len(codes) == 0
	for _, c := range codes {
		ok = ok || t.Code == c
	}
	if !ok {
		return fmt.Errorf("the Terminate code %#04x (%v), want %s", uint16(t.Code), t.Code, iwCodeList(codes))
	}
	sent := s.lastSent.ULPDU
	if rule == HdrAny || len(sent) < 2 {
		return nil
	}
	hl := wire.DDPHeaderLen(wire.DDPHeader(sent).Tagged())
	if !t.D || !bytes.Equal(t.DDPHeader, sent[:hl]) {
		return fmt.Errorf("the Terminate D=%v with DDP header % x, want D=1 with the offending header % x (#%d→)", t.D, t.DDPHeader, sent[:hl], s.lastSent.Frame)
	}
	if rule == HdrDDPRDMA {
		op := wire.DDPHeader(sent).Opcode().Info()
		want := sent[hl:min(len(sent), hl+op.BodyLen)]
		if !t.R || !bytes.Equal(t.RDMAPHeader, want) {
			return fmt.Errorf("the Terminate R=%v with RDMAP header % x, want R=1 with % x", t.R, t.RDMAPHeader, want)
		}
	}
	return nil
}

func iwCodeList(codes []wire.TermCode) string {
	var b bytes.Buffer
	for i, c := range codes {
		if i > 0 {
			b.WriteString(" or ")
		}
		fmt.Fprintf(&b, "%#04x", uint16(c))
	}
	return b.String()
}

// ExpectClosed wants the DUT to end the stream, with no FPDU before the
// end (RFC 5040 §4.8: the Terminate is the last message).
var ExpectClosed = IW{"expect the stream closed", func(s *iwSession) error {
	fr, err := s.port.Recv(s.wait())
	if err == nil {
		return fmt.Errorf("the DUT sent %v where the stream should end", fr)
	}
	if !errors.Is(err, iwport.ErrClosed) {
		return fmt.Errorf("the DUT did not close the stream: %w", err)
	}
	end, _ := s.port.Closed(0)
	if errors.Is(end.Why, io.EOF) {
		s.r.Note("stream closed")
	} else {
		s.r.Note("stream reset")
	}
	return nil
}}

// ExpectSilence wants no FPDU from the DUT for a while.
var ExpectSilence = IW{"expect no FPDU", func(s *iwSession) error {
	fr, err := s.port.Recv(s.quiet())
	if err == nil {
		return fmt.Errorf("the DUT sent %v", fr)
	}
	if errors.Is(err, iwport.ErrTimeout) || errors.Is(err, iwport.ErrClosed) {
		return nil
	}
	return err
}}

// ExpectFPDU receives the DUT's next FPDU and checks it.
func ExpectFPDU(what string, check func(s *iwSession, f *iwport.Frame) error) IW {
	return IW{"expect " + what, func(s *iwSession) error {
		fr, err := s.port.Recv(s.wait())
		if err != nil {
			return fmt.Errorf("no %s from the DUT: %w", what, err)
		}
		s.r.Note("%v", fr)
		if fr.Err != nil {
			return fmt.Errorf("the DUT's FPDU (#%d←) does not decode: %w", fr.Frame, fr.Err)
		}
		return check(s, fr)
	}}
}

// NoWCSuccess wants no successful completion on the DUT (a WR the DUT
// must not complete as if nothing happened).
var NoWCSuccess = Func{"no successful completion", func(r *Run) error {
	wcs, err := r.Agent.PollCQ(r.CQ, 16, r.Bound(DefaultQuiet))
	if err != nil {
		return err
	}
	for _, wc := range wcs {
		r.Note("wc %d %s", wc.ID, wc.StatusName)
		if verbs.WCStatus(wc.Status) == verbs.WCSuccess {
			return fmt.Errorf("WR %d completed successfully (%s, %d bytes)", wc.ID, wc.OpcodeName, wc.ByteLen)
		}
	}
	return nil
}}

// iwPattern returns n recognisable octets.
func iwPattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}
