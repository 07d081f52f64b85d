package nic

import (
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// IBTA 1.5's FLUSH and ATOMIC WRITE are a RoCE device's: its extended
// flags say so, and its MRs and QPs accept the FLUSH access flags. An
// iWARP device has neither (no RFC defines them) and refuses all of it
// as not supported, as the kernel refuses flags a device lacks.
func TestIBTA15ByTransport(t *testing.T) {
	const flushes = memory.FlushGlobal | memory.FlushPersistent
	for _, c := range []struct {
		tr   verbs.Transport
		caps verbs.DeviceCapEx
		err  error
	}{
		{verbs.TransportIB, verbs.DeviceFlushGlobal | verbs.DeviceFlushPersistent | verbs.DeviceAtomicWrite, nil},
		{verbs.TransportIWARP, 0, verbs.ErrNotSupported},
	} {
		f := newFixture(t, func(cfg *Config) { cfg.Transport = c.tr })
		if got := f.d.Query().DeviceCapFlagsEx; got != c.caps {
			t.Fatalf("%v: extended flags %#x, want %#x", c.tr, uint64(got), uint64(c.caps))
		}
		_, err := f.d.RegMR(f.pd, make([]byte, 64), memory.LocalWrite|memory.RemoteWrite|flushes)
		wantIs(t, c.tr.String()+" RegMR with FLUSH access", err, c.err)
		q, _ := f.qp(verbs.QPTypeRC)
		a := verbs.QPAttr{State: verbs.QPSInit, AccessFlags: memory.RemoteWrite | flushes, PortNum: 1}
		err = q.Modify(&a, verbs.AttrState|verbs.AttrAccessFlags|verbs.AttrPKeyIndex|verbs.AttrPort)
		wantIs(t, c.tr.String()+" QP access with FLUSH", err, c.err)
		q, _ = f.qpIn(verbs.QPTypeRC, verbs.QPSRTS)
		for _, wr := range []*verbs.SendWR{
			{Opcode: verbs.WRAtomicWrite, RemoteAddr: 0x1000, Swap: 1},
			{Opcode: verbs.WRFlush, RemoteAddr: 0x1000, FlushType: verbs.FlushGlobal, FlushLen: 8},
		} {
			wantIs(t, c.tr.String()+" "+wr.Opcode.String(), q.PostSend(wr), c.err)
		}
	}
}

// The post-time rules of FLUSH and ATOMIC WRITE WRs (libibverbs' ibv_wr_*
// take no SGE; rxe checks the same at post).
func TestIBTA15PostChecks(t *testing.T) {
	f := newFixture(t)
	mr, _ := f.mr(64, memory.LocalWrite)
	sge := []verbs.SGE{{Addr: mr.Addr(), Length: 8, LKey: mr.LKey()}}
	for _, c := range []struct {
		name string
		wr   verbs.SendWR
		err  error
	}{
		{"atomic write", verbs.SendWR{Opcode: verbs.WRAtomicWrite, RemoteAddr: 0x1008}, nil},
		{"atomic write misaligned", verbs.SendWR{Opcode: verbs.WRAtomicWrite, RemoteAddr: 0x1004}, verbs.ErrInvalid},
		{"atomic write with an SGE", verbs.SendWR{Opcode: verbs.WRAtomicWrite, RemoteAddr: 0x1008, SGL: sge}, verbs.ErrInvalid},
		{"flush range", verbs.SendWR{Opcode: verbs.WRFlush, FlushType: verbs.FlushPersistent, FlushLen: 1 << 31}, nil},
		{"flush MR, both types", verbs.SendWR{Opcode: verbs.WRFlush, FlushType: verbs.FlushTypes, FlushLevel: verbs.FlushMR}, nil},
		{"flush no type", verbs.SendWR{Opcode: verbs.WRFlush}, verbs.ErrInvalid},
		{"flush reserved type", verbs.SendWR{Opcode: verbs.WRFlush, FlushType: 4}, verbs.ErrInvalid},
		{"flush reserved level", verbs.SendWR{Opcode: verbs.WRFlush, FlushType: verbs.FlushGlobal, FlushLevel: 2}, verbs.ErrInvalid},
		{"flush too long", verbs.SendWR{Opcode: verbs.WRFlush, FlushType: verbs.FlushGlobal, FlushLen: 1<<31 + 1}, verbs.ErrInvalid},
		{"flush with an SGE", verbs.SendWR{Opcode: verbs.WRFlush, FlushType: verbs.FlushGlobal, SGL: sge}, verbs.ErrInvalid},
	} {
		q, _ := f.qpIn(verbs.QPTypeRC, verbs.QPSRTS)
		wr := c.wr
		wantIs(t, c.name, q.PostSend(&wr), c.err)
	}
}
