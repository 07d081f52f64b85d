package iwconform

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/tools/conform/iwport"
	"github.com/rnic/rnic/nic/verbs"
)

// The steps cases are written with. Each names what it does; the tester's
// sends and expectations note their capture frames for the evidence.

// Do is a step that runs f.
func Do(name string, f func(s *Session) error) Step { return Step{Name: name, Do: f} }

// Send sends the segment mk builds (headers and payload), misframed as tx
// says.
func Send(name string, mk func(s *Session) (wire.Headers, []byte), tx iwport.Tx) Step {
	return Do("send "+name, func(s *Session) error {
		h, payload := mk(s)
		sent, err := s.Port.SendSegment(&h, payload, tx)
		if err != nil {
			return err
		}
		s.LastSent = sent
		s.Note("sent %s (frame %d)", name, sent.Frame)
		return nil
	})
}

// SendRaw sends a ULPDU given as octets (for headers wire cannot build).
func SendRaw(name string, mk func(s *Session) []byte) Step {
	return Do("send "+name, func(s *Session) error {
		sent, err := s.Port.SendULPDU(mk(s), iwport.Tx{})
		if err != nil {
			return err
		}
		s.LastSent = sent
		s.Note("sent %s (frame %d)", name, sent.Frame)
		return nil
	})
}

// HdrRule says which offending headers a Terminate must carry.
type HdrRule uint8

// Header rules.
const (
	// HdrAny checks nothing about them.
	HdrAny HdrRule = iota
	// HdrDDP: D (and M) set, with the DDP header of the segment sent
	// last, octet for octet.
	HdrDDP
	// HdrDDPRDMA: HdrDDP, and R set with the RDMAP header (Read or Atomic
	// Request) of that segment.
	HdrDDPRDMA
)

// ExpectTerminate waits for the DUT's Terminate and checks its code
// (one of codes) and the headers rule demands.
func ExpectTerminate(rule HdrRule, codes ...wire.TermCode) Step {
	return Do("expect Terminate", func(s *Session) error {
		fr, err := s.recvTerminate()
		if err != nil {
			return err
		}
		return s.checkTerminate(fr, rule, codes)
	})
}

// recvTerminate waits for the DUT's Terminate, skipping other FPDUs.
func (s *Session) recvTerminate() (*iwport.Frame, error) {
	fr, skipped, err := s.Port.RecvUntil(s.wait(), func(f *iwport.Frame) bool { return f.Opcode() == wire.OpTerminate })
	for _, f := range skipped {
		s.Note("got %v", f)
	}
	if err != nil {
		return nil, fmt.Errorf("no Terminate from the DUT: %w", err)
	}
	s.Note("got %v", fr)
	if fr.Err != nil || fr.Term == nil {
		return nil, fmt.Errorf("the DUT's Terminate (frame %d) does not decode: %v", fr.Frame, fr.Err)
	}
	return fr, nil
}

func (s *Session) checkTerminate(fr *iwport.Frame, rule HdrRule, codes []wire.TermCode) error {
	t := fr.Term
	ok := len(codes) == 0
	for _, c := range codes {
		ok = ok || t.Code == c
	}
	if !ok {
		return fmt.Errorf("Terminate code %#04x (%v), want %s", uint16(t.Code), t.Code, codeList(codes))
	}
	sent := s.LastSent.ULPDU
	if rule == HdrAny || len(sent) < 2 {
		return nil
	}
	hl := wire.DDPHeaderLen(wire.DDPHeader(sent).Tagged())
	if !t.D || !bytes.Equal(t.DDPHeader, sent[:hl]) {
		return fmt.Errorf("Terminate D=%v with DDP header % x, want D=1 with the offending header % x (frame %d)", t.D, t.DDPHeader, sent[:hl], s.LastSent.Frame)
	}
	if rule == HdrDDPRDMA {
		op := wire.DDPHeader(sent).Opcode().Info()
		want := sent[hl:min(len(sent), hl+op.BodyLen)]
		if !t.R || !bytes.Equal(t.RDMAPHeader, want) {
			return fmt.Errorf("Terminate R=%v with RDMAP header % x, want R=1 with % x", t.R, t.RDMAPHeader, want)
		}
	}
	return nil
}

func codeList(codes []wire.TermCode) string {
	var b bytes.Buffer
	for i, c := range codes {
		if i > 0 {
			b.WriteString(" or ")
		}
		fmt.Fprintf(&b, "%#04x (%v)", uint16(c), c)
	}
	return b.String()
}

// ExpectClosed waits for the DUT to end the stream (RFC 5040 §4.8: the
// stream ends after a Terminate), skipping nothing: an FPDU after the
// Terminate fails the step.
func ExpectClosed() Step {
	return Do("expect the stream closed", func(s *Session) error {
		fr, err := s.Port.Recv(s.wait())
		if err == nil {
			return fmt.Errorf("the DUT sent %v where the stream should end", fr)
		}
		if !errors.Is(err, iwport.ErrClosed) {
			return fmt.Errorf("the DUT did not close the stream: %w", err)
		}
		end, _ := s.Port.Closed(0)
		how := "closed"
		if !errors.Is(end.Why, io.EOF) {
			how = "reset"
		}
		s.Note("stream %s", how)
		return nil
	})
}

// ExpectSilence checks that the DUT sends no FPDU for Env.Quiet.
func ExpectSilence() Step {
	return Do("expect no FPDU", func(s *Session) error {
		fr, err := s.Port.Recv(s.quiet())
		if err == nil {
			return fmt.Errorf("the DUT sent %v", fr)
		}
		if errors.Is(err, iwport.ErrTimeout) || errors.Is(err, iwport.ErrClosed) {
			return nil
		}
		return err
	})
}

// ExpectFrame receives the DUT's next FPDU and checks it.
func ExpectFrame(what string, check func(s *Session, f *iwport.Frame) error) Step {
	return Do("expect "+what, func(s *Session) error {
		fr, err := s.Port.Recv(s.wait())
		if err != nil {
			return fmt.Errorf("no %s from the DUT: %w", what, err)
		}
		s.Note("got %v", fr)
		if fr.Err != nil {
			return fmt.Errorf("the DUT's FPDU (frame %d) does not decode: %w", fr.Frame, fr.Err)
		}
		return check(s, fr)
	})
}

// ExpectQPState checks the DUT QP's state, waiting up to Env.Wait for it.
func ExpectQPState(want verbs.QPState) Step {
	return Do("expect QP "+want.String(), func(s *Session) error {
		deadline := time.Now().Add(s.wait())
		for {
			st, err := s.DUT.QPState(s.Ctx, s.QP)
			if err != nil {
				return err
			}
			if st == want {
				s.Note("QP %v", st)
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the DUT's QP is %v, want %v", st, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// ExpectWC polls the DUT's CQ for the next completion and checks its WR
// ID, status and (for a success) opcode and length (n < 0: any).
func ExpectWC(id uint64, status verbs.WCStatus, op verbs.WCOpcode, n int) Step {
	return Do(fmt.Sprintf("expect completion of WR %d", id), func(s *Session) error {
		wc, err := s.nextWC()
		if err != nil {
			return err
		}
		s.Note("WC %d %v", wc.WRID, wc.Status)
		switch {
		case wc.WRID != id || wc.Status != status:
			return fmt.Errorf("completion WR %d %v, want WR %d %v", wc.WRID, wc.Status, id, status)
		case status == verbs.WCSuccess && wc.Opcode != op:
			return fmt.Errorf("completion opcode %v, want %v", wc.Opcode, op)
		case status == verbs.WCSuccess && n >= 0 && int(wc.ByteLen) != n:
			return fmt.Errorf("completion of %d bytes, want %d", wc.ByteLen, n)
		}
		return nil
	})
}

// ExpectNoWCSuccess checks that no completion succeeded (a WR the DUT
// must not complete as if nothing happened).
func ExpectNoWCSuccess() Step {
	return Do("expect no successful completion", func(s *Session) error {
		wcs, err := s.DUT.Poll(s.Ctx, s.QP, s.quiet())
		if err != nil {
			return err
		}
		for _, wc := range wcs {
			if wc.Status == verbs.WCSuccess {
				return fmt.Errorf("WR %d completed successfully (%v, %d bytes)", wc.WRID, wc.Opcode, wc.ByteLen)
			}
		}
		return nil
	})
}

// nextWC returns the DUT's next completion, keeping any others for later.
func (s *Session) nextWC() (verbs.WC, error) {
	if len(s.wcs) == 0 {
		wcs, err := s.DUT.Poll(s.Ctx, s.QP, s.wait())
		if err != nil {
			return verbs.WC{}, err
		}
		if len(wcs) == 0 {
			return verbs.WC{}, errors.New("no completion on the DUT")
		}
		s.wcs = append(s.wcs, wcs...)
	}
	wc := s.wcs[0]
	s.wcs = s.wcs[1:]
	return wc, nil
}

// ExpectMem checks the DUT's buffer at off.
func ExpectMem(off int, want func(s *Session) []byte) Step {
	return Do(fmt.Sprintf("expect DUT memory at %d", off), func(s *Session) error {
		w := want(s)
		got, err := s.DUT.ReadMR(s.Ctx, s.MR, off, len(w))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, w) {
			return fmt.Errorf("DUT memory at %d is % x, want % x", off, clip(got), clip(w))
		}
		return nil
	})
}

func clip(b []byte) []byte { return b[:min(len(b), 16)] }

// WriteMem fills the DUT's buffer at off.
func WriteMem(off int, b []byte) Step {
	return Do(fmt.Sprintf("write DUT memory at %d", off), func(s *Session) error {
		return s.DUT.WriteMR(s.Ctx, s.MR, off, b)
	})
}

// PostRecv posts a receive of n bytes at off on the DUT.
func PostRecv(id uint64, off, n int) Step {
	return Do(fmt.Sprintf("post receive %d", id), func(s *Session) error {
		return s.DUT.PostRecv(s.Ctx, s.QP, id, s.MR, off, n)
	})
}

// PostSend posts the send WR mk builds on the DUT.
func PostSend(name string, mk func(s *Session) SendWR) Step {
	return Do("post "+name, func(s *Session) error { return s.DUT.PostSend(s.Ctx, s.QP, mk(s)) })
}

// pattern returns n recognisable octets.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}
