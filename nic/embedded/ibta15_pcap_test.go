package embedded

import (
	"bytes"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/tsharktest"
)

// TestIBTA15Pcap: a capture of IBTA 1.5's ATOMIC WRITE and FLUSH between
// two RoCE NICs, and their answers, as rnic decode and Wireshark read it.
// rnic decode names both opcodes and the FETH's values. tshark 4.0
// (Debian 12) has neither opcode in its table: it shows "Unknown OpCode"
// and the vendor dissection, no malformation, the BTH right; 4.4 and later
// decode their RETH too, which is then compared. Their answers, RDMA READ
// Response Only without payload, decode fully in every version.
func TestIBTA15Pcap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ibta15.pcap")
	w, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	addrA, addrB := netip.MustParseAddr("127.0.0.81"), netip.MustParseAddr("127.0.0.82")
	a, err := openEnds(addrA, 4791, 4791, addrB, w)
	if err != nil {
		t.Fatal(err)
	}
	defer a.nic.Close()
	b, err := openEnds(addrB, 4791, 4791, addrA, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.nic.Close()
	for _, c := range []struct{ from, to *ends }{{a, b}, {b, a}} {
		p, err := parseInfo(c.to.info())
		if err == nil {
			err = c.from.connect(p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	fmr := flushRegion(t, b)
	const word, off, n = 0x100, 0x1000, 100
	copy(a.buf[off:], bytes.Repeat([]byte("ibta"), n/4))
	va := fmr.Addr()
	for _, wr := range []verbs.SendWR{
		{ID: 1, Opcode: verbs.WRAtomicWrite, Flags: verbs.SendSignaled, RemoteAddr: va + word, RKey: fmr.RKey(), Swap: 0x1122334455667788},
		{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{{Addr: a.mr.Addr() + off, Length: n, LKey: a.mr.LKey()}}, RemoteAddr: va + off, RKey: fmr.RKey()},
		{ID: 3, Opcode: verbs.WRFlush, Flags: verbs.SendSignaled, RemoteAddr: va + off, RKey: fmr.RKey(),
			FlushType: verbs.FlushGlobal | verbs.FlushPersistent, FlushLevel: verbs.FlushRange, FlushLen: n},
	} {
		if err := a.rc.PostSend(&wr); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []verbs.WC{{WRID: 1, Opcode: verbs.WCAtomicWrite}, {WRID: 3, Opcode: verbs.WCFlush}} {
		if got := pollOne(t, a.cq); got.WRID != want.WRID || got.Status != verbs.WCSuccess || got.Opcode != want.Opcode {
			t.Fatalf("completion %+v, want wr %d %v", got, want.WRID, want.Opcode)
		}
	}
	// The responder stored the word atomically, on its own goroutine; the
	// completion came back over a socket, which the race detector does not
	// count as an ordering: read it atomically too.
	if v := atomic.LoadUint64((*uint64)(unsafe.Pointer(&b.buf[word]))); v != 0x1122334455667788 {
		t.Fatalf("word %#x after the ATOMIC WRITE", v)
	}
	a.nic.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkIBTA15Decode(t, path)
	checkIBTA15Tshark(t, path)
}

// flushRegion registers b's buffer again with both FLUSH rights and lets
// b's RC QP take FLUSHes (RTS to RTS).
func flushRegion(t *testing.T, b *ends) *nic.MR {
	t.Helper()
	flush := memory.FlushGlobal | memory.FlushPersistent
	mr, err := b.nic.RegMR(b.pd, b.buf, memory.LocalWrite|memory.RemoteWrite|flush)
	if err != nil {
		t.Fatal(err)
	}
	acc := memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic | flush
	if err := b.rc.Modify(&verbs.QPAttr{State: verbs.QPSRTS, AccessFlags: acc}, verbs.AttrState|verbs.AttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	return mr
}

// pollOne waits up to 10 s for one completion of cq.
func pollOne(t *testing.T, cq *nic.CQ) verbs.WC {
	t.Helper()
	wc := make([]verbs.WC, 1)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cq.Poll(wc) == 1 {
			return wc[0]
		}
	}
	t.Fatal("no completion within 10 s")
	return verbs.WC{}
}

// checkIBTA15Decode: rnic decode names the opcodes and the FETH, and every
// frame decodes with a good ICRC.
func checkIBTA15Decode(t *testing.T, path string) {
	t.Helper()
	var out bytes.Buffer
	sum, err := decode.Run(&out, []string{path}, decode.Options{})
	if err != nil || sum.Problems() {
		t.Fatalf("rnic decode: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"RC ATOMIC WRITE ", "reth va=", "len=8 payload=8 icrc=ok",
		"RC FLUSH ", "feth placement=global+persistence selectivity=range",
		"RC RDMA READ Response Only ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rnic decode shows no %q:\n%s", want, text)
		}
	}
	if got := strings.Count(text, "RC RDMA READ Response Only "); got != 2 {
		t.Errorf("%d RDMA READ Response Only, want 2 (the answers to the ATOMIC WRITE and the FLUSH):\n%s", got, text)
	}
}

// checkIBTA15Tshark: no malformed frame or expert warning; the requests'
// BTH as encoded (their RETH too where tshark knows the opcodes); the
// answers decode fully, an ACK without data.
func checkIBTA15Tshark(t *testing.T, path string) {
	t.Helper()
	tsharktest.Check(t, path, tsharktest.Options{})
	major, minor, _ := tsharktest.Version(t)
	knows := major > 4 || major == 4 && minor >= 4
	rows := tsharktest.Fields(t, path, tsharktest.Options{}, "_ws.col.Info", "infiniband.bth.opcode",
		"infiniband.vendor", "infiniband.reth.dmalen", "infiniband.aeth.syndrome", "data.len")
	seen := map[uint64]int{}
	for i, r := range rows {
		op, ok := r.Int("infiniband.bth.opcode")
		if !ok {
			continue
		}
		seen[op]++
		switch wire.Opcode(op) {
		case wire.RCAtomicWrite, wire.RCFlush:
			unknown := strings.Contains(r["_ws.col.Info"], "Unknown OpCode")
			if unknown == knows {
				t.Errorf("frame %d (%v): tshark %d.%d Info %q", i+1, wire.Opcode(op), major, minor, r["_ws.col.Info"])
			}
			if !knows && r["infiniband.vendor"] == "" {
				t.Errorf("frame %d (%v): no vendor dissection for the unknown opcode", i+1, wire.Opcode(op))
			}
			if knows {
				want := map[wire.Opcode]uint64{wire.RCAtomicWrite: 8, wire.RCFlush: 100}[wire.Opcode(op)]
				if got, ok := r.Int("infiniband.reth.dmalen"); !ok || got != want {
					t.Errorf("frame %d (%v): reth.dmalen %q, want %d", i+1, wire.Opcode(op), r["infiniband.reth.dmalen"], want)
				}
			}
		case wire.RCReadResponseOnly:
			if syn, ok := r.Int("infiniband.aeth.syndrome"); !ok || wire.Syndrome(syn).Type() != wire.AckTypeACK {
				t.Errorf("frame %d: READ Response Only syndrome %q, want an ACK", i+1, r["infiniband.aeth.syndrome"])
			}
			if r["data.len"] != "" {
				t.Errorf("frame %d: READ Response Only carries data (%s bytes), want none", i+1, r["data.len"])
			}
		}
	}
	for _, op := range []wire.Opcode{wire.RCAtomicWrite, wire.RCFlush} {
		if seen[uint64(op)] != 1 {
			t.Errorf("tshark saw %d %v frames, want 1 (%v)", seen[uint64(op)], op, seen)
		}
	}
	if seen[uint64(wire.RCReadResponseOnly)] != 2 {
		t.Errorf("tshark saw %d READ Response Only, want 2", seen[uint64(wire.RCReadResponseOnly)])
	}
}
