package nic

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

func sendWR(op verbs.WROpcode, sgl ...verbs.SGE) *verbs.SendWR {
	return &verbs.SendWR{ID: 7, Opcode: op, SGL: sgl}
}

func TestPostSendState(t *testing.T) {
	for _, st := range allStates {
		f := newFixture(t)
		q, e := f.qpIn(verbs.QPTypeRC, st)
		err := q.PostSend(sendWR(verbs.WRSend))
		switch st {
		case verbs.QPSReset, verbs.QPSInit, verbs.QPSRTR:
			wantIs(t, "post in "+st.String(), err, verbs.ErrInvalidState)
			var pe *verbs.PostError
			if !errors.As(err, &pe) || pe.Index != 0 || pe.WRID != 7 {
				t.Errorf("%v: %v is not a PostError for WR 0", st, err)
			}
			if len(e.postedWRs()) != 0 {
				t.Errorf("%v: reached the engine", st)
			}
		case verbs.QPSRTS, verbs.QPSSQD:
			wantIs(t, "post in "+st.String(), err, nil)
			if len(e.postedWRs()) != 1 {
				t.Errorf("%v: not posted", st)
			}
		case verbs.QPSSQE, verbs.QPSErr:
			// Passed to the engine, which flushes.
			wantIs(t, "post in "+st.String(), err, nil)
			wcs := make([]verbs.WC, 2)
			if n := f.cq.Poll(wcs); n != 1 || wcs[0].Status != verbs.WCWRFlushErr {
				t.Errorf("%v: completions %v", st, wcs[:n])
			}
		}
	}
}

// TestPostSendOpcodes checks which opcodes each QP type accepts.
func TestPostSendOpcodes(t *testing.T) {
	type want struct{ rc, uc, ud error }
	ok := want{}
	rcOnly := want{nil, verbs.ErrInvalid, verbs.ErrInvalid}
	rcUC := want{nil, nil, verbs.ErrInvalid}
	table := map[verbs.WROpcode]want{
		verbs.WRSend:             ok,
		verbs.WRSendWithImm:      ok,
		verbs.WRSendWithInv:      rcOnly,
		verbs.WRRDMAWrite:        rcUC,
		verbs.WRRDMAWriteWithImm: rcUC,
		verbs.WRRDMARead:         rcOnly,
		verbs.WRAtomicCmpSwp:     rcOnly,
		verbs.WRAtomicFetchAdd:   rcOnly,
		verbs.WRLocalInv:         rcUC,
		verbs.WRBindMW:           rcUC,
		verbs.WRFlush:            rcOnly,
		verbs.WRAtomicWrite:      rcOnly,
		verbs.WROpcode(10):       {verbs.ErrInvalid, verbs.ErrInvalid, verbs.ErrInvalid},
		verbs.WROpcode(200):      {verbs.ErrInvalid, verbs.ErrInvalid, verbs.ErrInvalid},
	}
	f := newFixture(t)
	mr, _ := f.mr(64, memory.LocalWrite)
	ah, err := f.d.CreateAH(f.pd, goodAV())
	wantIs(t, "CreateAH", err, nil)
	for op, w := range table {
		for _, typ := range qpTypes {
			expect := map[verbs.QPType]error{verbs.QPTypeRC: w.rc, verbs.QPTypeUC: w.uc, verbs.QPTypeUD: w.ud}[typ]
			q, _ := f.qpIn(typ, verbs.QPSRTS)
			wr := sendWR(op, verbs.SGE{Addr: mr.Addr(), Length: 8, LKey: mr.LKey()})
			if verbs.IBTA15Opcodes.Has(op) {
				wr.SGL, wr.FlushType = nil, verbs.FlushGlobal // they take no SGE
			}
			if op == verbs.WRBindMW {
				wr.SGL = nil // a bind moves no data
			}
			if typ == verbs.QPTypeUD {
				wr.AH = ah.AV()
			}
			wantIs(t, fmt.Sprintf("%v on %v", op, typ), q.PostSend(wr), expect)
		}
	}
}

func TestPostSendChecks(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limits = Limits{MaxSGE: 8, MaxSGERd: 2} })
	mr, buf := f.mr(256, memory.LocalWrite)
	sge := func(off, n uint32) verbs.SGE {
		return verbs.SGE{Addr: mr.Addr() + uint64(off), Length: n, LKey: mr.LKey()}
	}
	q, e := f.qpWith(QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq,
		Cap: verbs.QPCap{MaxSendWR: 64, MaxSendSGE: 4, MaxInlineData: 16}})
	e.setState(verbs.QPSRTS)

	inl := func(wr *verbs.SendWR) *verbs.SendWR { wr.Flags |= verbs.SendInline; return wr }
	cases := []struct {
		name string
		wr   *verbs.SendWR
		err  error
	}{
		{"nil", nil, verbs.ErrInvalid},
		{"4 SGEs", sendWR(verbs.WRSend, sge(0, 1), sge(1, 1), sge(2, 1), sge(3, 1)), nil},
		{"5 SGEs", sendWR(verbs.WRSend, sge(0, 1), sge(1, 1), sge(2, 1), sge(3, 1), sge(4, 1)), verbs.ErrInvalid},
		{"READ 2 SGEs", sendWR(verbs.WRRDMARead, sge(0, 1), sge(1, 1)), nil},
		{"READ 3 SGEs > max_sge_rd", sendWR(verbs.WRRDMARead, sge(0, 1), sge(1, 1), sge(2, 1)), verbs.ErrInvalid},
		{"zero-length SEND", sendWR(verbs.WRSend), nil},
		{"unknown flag", &verbs.SendWR{Opcode: verbs.WRSend, Flags: 1 << 5}, verbs.ErrInvalid},
		{"all flags", &verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendFence | verbs.SendSignaled | verbs.SendSolicited | verbs.SendInline}, nil},
		{"2^31 bytes", sendWR(verbs.WRRDMAWrite, verbs.SGE{Length: 1 << 31}), nil},
		{"2^31+1 bytes", sendWR(verbs.WRRDMAWrite, verbs.SGE{Length: 1 << 31}, verbs.SGE{Length: 1}), verbs.ErrInvalid},
		{"inline 16", inl(sendWR(verbs.WRSend, sge(0, 16))), nil},
		{"inline 17", inl(sendWR(verbs.WRSend, sge(0, 17))), verbs.ErrInvalid},
		{"inline WRITE", inl(sendWR(verbs.WRRDMAWriteWithImm, sge(0, 8))), nil},
		{"inline READ", inl(sendWR(verbs.WRRDMARead, sge(0, 8))), verbs.ErrInvalid},
		{"inline atomic", inl(sendWR(verbs.WRAtomicFetchAdd, sge(0, 8))), verbs.ErrInvalid},
		{"inline bad lkey", inl(sendWR(verbs.WRSend, verbs.SGE{Addr: mr.Addr(), Length: 4, LKey: mr.LKey() + 1})), verbs.ErrInvalid},
		{"inline out of bounds", inl(sendWR(verbs.WRSend, sge(250, 10))), verbs.ErrInvalid},
		{"Inline bytes", &verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline, Inline: []byte("hello")}, nil},
		{"Inline bytes too long", &verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline, Inline: make([]byte, 17)}, verbs.ErrInvalid},
		{"Inline bytes without flag", &verbs.SendWR{Opcode: verbs.WRSend, Inline: []byte("x")}, verbs.ErrInvalid},
		{"Inline bytes and SGEs", &verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline, Inline: []byte("x"), SGL: []verbs.SGE{sge(0, 1)}}, verbs.ErrInvalid},
		{"atomic", &verbs.SendWR{Opcode: verbs.WRAtomicCmpSwp, SGL: []verbs.SGE{sge(8, 8)}, RemoteAddr: 0x1000}, nil},
		{"atomic 4-byte SGE", &verbs.SendWR{Opcode: verbs.WRAtomicCmpSwp, SGL: []verbs.SGE{sge(8, 4)}, RemoteAddr: 0x1000}, verbs.ErrInvalid},
		{"atomic no SGE", &verbs.SendWR{Opcode: verbs.WRAtomicFetchAdd, RemoteAddr: 0x1000}, verbs.ErrInvalid},
		{"atomic 2 SGEs", &verbs.SendWR{Opcode: verbs.WRAtomicFetchAdd, SGL: []verbs.SGE{sge(0, 8), sge(8, 8)}, RemoteAddr: 0x1000}, verbs.ErrInvalid},
		{"atomic misaligned", &verbs.SendWR{Opcode: verbs.WRAtomicFetchAdd, SGL: []verbs.SGE{sge(8, 8)}, RemoteAddr: 0x1004}, verbs.ErrInvalid},
	}
	for _, c := range cases {
		err := q.PostSend(c.wr)
		wantIs(t, c.name, err, c.err)
	}

	// INLINE data is copied at post time.
	copy(buf, "0123456789abcdef")
	before := len(e.postedWRs())
	wantIs(t, "inline", q.PostSend(inl(sendWR(verbs.WRSend, sge(0, 4), sge(10, 6)))), nil)
	copy(buf, "XXXXXXXXXXXXXXXX")
	w := e.postedWRs()[before]
	if string(w.Inline) != "0123abcdef" || len(w.SGL) != 2 {
		t.Errorf("inline WR: Inline %q SGL %v", w.Inline, w.SGL)
	}
	src := []byte("bytes")
	wantIs(t, "Inline bytes", q.PostSend(&verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline, Inline: src}), nil)
	src[0] = 'X'
	if w := e.postedWRs()[before+1]; string(w.Inline) != "bytes" {
		t.Errorf("Inline bytes not copied: %q", w.Inline)
	}

	// The WR and its SGE list are copied: the caller can reuse them.
	wr := sendWR(verbs.WRSend, sge(0, 4), sge(4, 4))
	wantIs(t, "send", q.PostSend(wr), nil)
	wr.ID, wr.SGL[0].Length = 99, 99
	w = e.postedWRs()[before+2]
	if w == wr || w.ID != 7 || w.SGL[0].Length != 4 || len(w.SGL) != 2 || cap(w.SGL) != 2 {
		t.Errorf("posted WR shares the caller's: %+v", w)
	}
}

func TestPostSendNoAtomics(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limits.NoAtomics = true })
	mr, _ := f.mr(64, memory.LocalWrite)
	q, _ := f.qpIn(verbs.QPTypeRC, verbs.QPSRTS)
	err := q.PostSend(&verbs.SendWR{Opcode: verbs.WRAtomicCmpSwp, SGL: []verbs.SGE{{Addr: mr.Addr(), Length: 8, LKey: mr.LKey()}}})
	wantIs(t, "atomic without atomics", err, verbs.ErrNotSupported)
}

func TestPostSendUD(t *testing.T) {
	f := newFixture(t)
	q, e := f.qpIn(verbs.QPTypeUD, verbs.QPSRTS)
	ah, err := f.d.CreateAH(f.pd, goodAV())
	wantIs(t, "CreateAH", err, nil)
	otherPD, _ := f.d.AllocPD()
	otherAH, err := f.d.CreateAH(otherPD, goodAV())
	wantIs(t, "CreateAH other PD", err, nil)
	rawAV := goodAV()

	ud := func(av *verbs.AddressVector, qpn uint32) *verbs.SendWR {
		return &verbs.SendWR{Opcode: verbs.WRSend, AH: av, RemoteQPN: qpn, RemoteQKey: 0x11111111}
	}
	wantIs(t, "UD send", q.PostSend(ud(ah.AV(), 0x42)), nil)
	if w := e.postedWRs()[0]; w.AH != ah.AV() || w.RemoteQPN != 0x42 {
		t.Errorf("posted %+v", w)
	}
	wantIs(t, "no AH", q.PostSend(ud(nil, 1)), verbs.ErrInvalid)
	wantIs(t, "raw AV", q.PostSend(ud(&rawAV, 1)), verbs.ErrInvalid)
	wantIs(t, "AH of another PD", q.PostSend(ud(otherAH.AV(), 1)), verbs.ErrInvalid)
	wantIs(t, "remote QPN > 24 bits", q.PostSend(ud(ah.AV(), 1<<24)), verbs.ErrInvalid)
	wantIs(t, "destroy AH", ah.Destroy(), nil)
	wantIs(t, "destroyed AH", q.PostSend(ud(ah.AV(), 1)), verbs.ErrInvalid)
}

func TestPostSendQueueFull(t *testing.T) {
	f := newFixture(t)
	q, _ := f.qpIn(verbs.QPTypeRC, verbs.QPSRTS) // max_send_wr 8, enforced by the engine
	wrs := make([]*verbs.SendWR, 10)
	for i := range wrs {
		wrs[i] = &verbs.SendWR{ID: uint64(i), Opcode: verbs.WRSend}
	}
	err := q.PostSend(wrs...)
	wantIs(t, "10 WRs into 8", err, verbs.ErrQueueFull)
	var pe *verbs.PostError
	if !errors.As(err, &pe) || pe.Index != 8 || pe.WRID != 8 {
		t.Fatalf("bad_wr: %v", err)
	}
}

func TestPostSendBatchStopsAtBadWR(t *testing.T) {
	f := newFixture(t)
	q, e := f.qpIn(verbs.QPTypeRC, verbs.QPSRTS)
	err := q.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.WRSend}, &verbs.SendWR{ID: 2, Opcode: 99}, &verbs.SendWR{ID: 3, Opcode: verbs.WRSend})
	var pe *verbs.PostError
	if !errors.As(err, &pe) || pe.Index != 1 || pe.WRID != 2 || !errors.Is(err, verbs.ErrInvalid) {
		t.Fatalf("err %v", err)
	}
	if ws := e.postedWRs(); len(ws) != 1 || ws[0].ID != 1 {
		t.Fatalf("posted %v", ws)
	}
}

func TestPostRecv(t *testing.T) {
	f := newFixture(t)
	q, e := f.qp(verbs.QPTypeRC) // max_recv_wr 8, max_recv_sge 4
	wantIs(t, "post in RESET", q.PostRecv(&verbs.RecvWR{ID: 1}), verbs.ErrInvalidState)
	e.setState(verbs.QPSInit)
	sgl := []verbs.SGE{{Addr: 1, Length: 2, LKey: 3}, {Addr: 4, Length: 5, LKey: 6}}
	wantIs(t, "post in INIT", q.PostRecv(&verbs.RecvWR{ID: 1, SGL: sgl}), nil)
	if e.recvPosted.Load() != 1 {
		t.Errorf("RecvPosted called %d times", e.recvPosted.Load())
	}
	sgl[0].Length = 99 // the caller reuses its SGE array
	wr, ok := q.rq.Pop()
	if !ok || wr.ID != 1 || len(wr.SGL) != 2 || wr.SGL[0].Length != 2 || wr.SGL[1].LKey != 6 {
		t.Fatalf("popped %+v", wr)
	}
	wantIs(t, "5 SGEs", q.PostRecv(&verbs.RecvWR{SGL: make([]verbs.SGE, 5)}), verbs.ErrInvalid)
	wantIs(t, "nil WR", q.PostRecv(nil), verbs.ErrInvalid)

	wrs := make([]*verbs.RecvWR, 9)
	for i := range wrs {
		wrs[i] = &verbs.RecvWR{ID: uint64(10 + i)}
	}
	err := q.PostRecv(wrs...)
	var pe *verbs.PostError
	if !errors.As(err, &pe) || pe.Index != 8 || !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("9 WRs into 8: %v", err)
	}
	if q.rq.Len() != 8 || e.recvPosted.Load() != 2 {
		t.Errorf("len %d, RecvPosted %d", q.rq.Len(), e.recvPosted.Load())
	}
	for i := range 8 {
		if wr, _ := q.rq.Pop(); wr.ID != uint64(10+i) {
			t.Fatalf("FIFO: %d", wr.ID)
		}
	}

	// In ERR, receive WRs complete at once with WR_FLUSH_ERR, in order.
	e.setState(verbs.QPSErr)
	wantIs(t, "post in ERR", q.PostRecv(&verbs.RecvWR{ID: 100}, &verbs.RecvWR{ID: 101}), nil)
	wcs := make([]verbs.WC, 4)
	n := f.cq.Poll(wcs)
	if n != 2 || wcs[0].WRID != 100 || wcs[1].WRID != 101 || wcs[0].Status != verbs.WCWRFlushErr ||
		wcs[0].Opcode != verbs.WCRecv || wcs[0].QPN != q.QPN() {
		t.Fatalf("flush completions %+v", wcs[:n])
	}
	if q.rq.Len() != 0 {
		t.Error("WRs left queued in ERR")
	}
}

func TestPostRecvOnSRQQP(t *testing.T) {
	f := newFixture(t)
	srq, err := f.d.CreateSRQ(f.pd, 4, 1)
	wantIs(t, "CreateSRQ", err, nil)
	q, e := f.qpWith(QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq, SRQ: srq, Cap: defaultCap})
	e.setState(verbs.QPSRTS)
	wantIs(t, "PostRecv on an SRQ QP", q.PostRecv(&verbs.RecvWR{}), verbs.ErrInvalid)
	if c := q.Cap(); c.MaxRecvWR != 0 || c.MaxRecvSGE != 0 {
		t.Errorf("receive caps of an SRQ QP: %+v", c)
	}
	if !e.cfg.UsesSRQ || e.cfg.RQ != srq {
		t.Error("engine not given the SRQ")
	}
}

// TestPostRecvRacesEngineError: a QP going to ERR while receives are
// posted must leave no WR stranded: every WR is either consumed by the
// "responder" or flushed, exactly once. Run with -race.
func TestPostRecvRacesEngineError(t *testing.T) {
	for range 20 {
		f := newFixture(t)
		cq, _ := f.d.CreateCQ(4096)
		q, e := f.qpWith(QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: verbs.QPCap{MaxRecvWR: 4096, MaxRecvSGE: 1}})
		e.setState(verbs.QPSRTS)
		const posts = 500
		var wg sync.WaitGroup
		wg.Add(2)
		consumed := 0
		go func() {
			defer wg.Done()
			for range posts {
				_ = q.PostRecv(&verbs.RecvWR{ID: 1})
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, ok := q.rq.Pop(); ok {
					consumed++
				}
			}
			// The engine errors the QP: state first, then the flush.
			_ = q.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState)
		}()
		wg.Wait()
		if got := consumed + cq.Len(); got != posts {
			t.Fatalf("%d consumed + %d flushed of %d posted", consumed, cq.Len(), posts)
		}
	}
}

func TestPostAfterDestroy(t *testing.T) {
	f := newFixture(t)
	q, _ := f.qpIn(verbs.QPTypeRC, verbs.QPSRTS)
	wantIs(t, "destroy", q.Destroy(), nil)
	wantIs(t, "PostSend", q.PostSend(sendWR(verbs.WRSend)), verbs.ErrDestroyed)
	wantIs(t, "PostRecv", q.PostRecv(&verbs.RecvWR{}), verbs.ErrDestroyed)
	wantIs(t, "Modify", q.Modify(attrFor(3, 6), verbs.AttrState), verbs.ErrDestroyed)
	_, err := q.Query()
	wantIs(t, "Query", err, verbs.ErrDestroyed)
	wantIs(t, "destroy twice", q.Destroy(), verbs.ErrDestroyed)
}

func TestSendWRCopiesSurviveReuse(t *testing.T) {
	// Many posts: copies come from shared chunks and must not overlap.
	f := newFixture(t)
	q, e := f.qpWith(QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq, Cap: verbs.QPCap{MaxSendWR: 1000, MaxSendSGE: 3, MaxInlineData: 100}})
	e.setState(verbs.QPSRTS)
	wr := &verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline}
	sg := &verbs.SendWR{Opcode: verbs.WRSend, SGL: make([]verbs.SGE, 3)}
	for i := range 500 {
		wr.ID = uint64(i)
		wr.Inline = bytes.Repeat([]byte{byte(i)}, i%100)
		wantIs(t, "inline", q.PostSend(wr), nil)
		sg.ID = uint64(i)
		for j := range sg.SGL {
			sg.SGL[j].Addr = uint64(i*3 + j)
		}
		_ = q.PostSend(sg) // may hit the engine's depth; fine
	}
	for _, w := range e.postedWRs() {
		if w.Inline != nil {
			if !bytes.Equal(w.Inline, bytes.Repeat([]byte{byte(w.ID)}, int(w.ID)%100)) {
				t.Fatalf("inline WR %d corrupted", w.ID)
			}
			continue
		}
		for j, s := range w.SGL {
			if s.Addr != w.ID*3+uint64(j) {
				t.Fatalf("SGL of WR %d corrupted", w.ID)
			}
		}
	}
}
