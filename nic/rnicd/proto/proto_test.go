// Round trips of every message body (filled field by field through
// reflection, so a field added and forgotten by Encode or Decode fails),
// the header's exact bytes, and the ring slots.

package proto

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// fill sets every field of v to a distinct non-zero value a decoder
// accepts.
func fill(v reflect.Value, n *uint64) {
	*n++
	switch v.Type() {
	case reflect.TypeFor[netip.Addr]():
		if *n%2 == 0 {
			v.Set(reflect.ValueOf(netip.AddrFrom4([4]byte{10, 0, byte(*n), 1})))
		} else {
			v.Set(reflect.ValueOf(netip.AddrFrom16([16]byte{0xfd, 15: byte(*n)})))
		}
		return
	case reflect.TypeFor[netip.Prefix]():
		a := reflect.New(reflect.TypeFor[netip.Addr]()).Elem()
		fill(a, n)
		addr := a.Interface().(netip.Addr)
		v.Set(reflect.ValueOf(netip.PrefixFrom(addr, int(*n)%(addr.BitLen()+1))))
		return
	case reflect.TypeFor[netip.AddrPort]():
		a := reflect.New(reflect.TypeFor[netip.Addr]()).Elem()
		fill(a, n)
		v.Set(reflect.ValueOf(netip.AddrPortFrom(a.Interface().(netip.Addr), uint16(*n))))
		return
	case reflect.TypeFor[ObjectKind]():
		v.SetUint(*n%3 + 1)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), n)
		}
		v.Set(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n % 100))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(*n % 200)
	}
}

func roundTrip(t *testing.T, name string, mk0 func() Message) {
	t.Helper()
	mk := mk0
	m := mk()
	var n uint64
	fill(reflect.ValueOf(m).Elem(), &n)
	w := NewWriter(nil)
	m.Encode(w)
	got := mk()
	r := NewReader(w.Bytes())
	got.Decode(r)
	if err := r.Done(); err != nil {
		t.Errorf("%s: decode: %v", name, err)
		return
	}
	if !reflect.DeepEqual(m, got) {
		t.Errorf("%s: round trip\n got %+v\nwant %+v", name, got, m)
	}
	// Every strict prefix is refused, never half-decoded silently.
	for cut := range len(w.Bytes()) {
		r := NewReader(w.Bytes()[:cut])
		mk().Decode(r)
		if r.Done() == nil {
			t.Errorf("%s: a %d-byte prefix of %d decoded", name, cut, len(w.Bytes()))
			break
		}
	}
}

func TestMessageRoundTrips(t *testing.T) {
	ops := Ops()
	if len(ops) < 22 {
		t.Fatalf("%d ops with bodies, want every core op", len(ops))
	}
	for _, op := range ops {
		b, _ := BodiesOf(op)
		if b.Request != nil {
			roundTrip(t, op.String()+" request", b.Request)
		}
		if b.Reply != nil {
			roundTrip(t, op.String()+" reply", b.Reply)
		}
		if strings.HasPrefix(op.String(), "Op(") {
			t.Errorf("op %#04x has no name", uint16(op))
		}
	}
	// The attribute structs in full, beyond what a message exercises.
	roundTrip(t, "ring layout", func() Message { return new(RingLayout) })
	roundTrip(t, "CQ layout", func() Message { return new(CQLayout) })
}

func TestHeaderBytes(t *testing.T) {
	msg := AppendMessage(nil, Header{Op: OpRegMR, Kind: KindRequest, NFDs: 1, Seq: 0x01020304}, &Handle{H: 0xa0b0c0d0})
	want := []byte{0x12, 0x00, 1, 1, 4, 3, 2, 1, 0, 0, 0, 0, 4, 0, 0, 0, 0xd0, 0xc0, 0xb0, 0xa0}
	if !bytes.Equal(msg, want) {
		t.Fatalf("message % x\nwant    % x", msg, want)
	}
	h, body, err := DecodeMessage(msg, 1)
	if err != nil || h.Op != OpRegMR || h.Kind != KindRequest || h.Seq != 0x01020304 || h.NFDs != 1 || len(body) != 4 {
		t.Fatalf("decode: %+v %x %v", h, body, err)
	}
	for _, tc := range []struct {
		name string
		msg  []byte
		nfds int
	}{
		{"short", msg[:15], 1},
		{"body length lies", append(append([]byte(nil), msg...), 0), 1},
		{"descriptors missing", msg, 0},
		{"kind 0", append([]byte{0x12, 0, 0, 1}, msg[4:]...), 1},
		{"kind 9", append([]byte{0x12, 0, 9, 1}, msg[4:]...), 1},
		{"status on a request", append(append([]byte{}, msg[:8]...), append([]byte{1, 0, 0, 0}, msg[12:]...)...), 1},
		{"too many descriptors", append([]byte{0x12, 0, 1, 5}, msg[4:]...), 5},
		{"oversized", make([]byte, MaxMessage+1), 0},
	} {
		if _, _, err := DecodeMessage(tc.msg, tc.nfds); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", tc.name, err)
		}
	}
}

func TestErrorReplies(t *testing.T) {
	for _, s := range []Status{StatusInvalid, StatusBusy, StatusNoMemory, StatusQueueFull, StatusInvalidState,
		StatusNotSupported, StatusPermission, StatusDestroyed, StatusNoProvider, StatusClosed, StatusCQOverrun,
		StatusLimit, StatusBadMessage, StatusUnknownOp, StatusNoDevice, StatusBadHandle, StatusVersion, StatusInternal} {
		msg := AppendError(nil, OpCreateQP, 9, s, "nic: it went wrong")
		h, body, err := DecodeMessage(msg, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeBody(h, body)
		var re *RemoteError
		if !errors.As(err, &re) || re.Status != s || re.Msg != "nic: it went wrong" {
			t.Errorf("status %d: %v", s, err)
		}
		// The status survives a trip through StatusOf.
		if got := StatusOf(err); got != s {
			t.Errorf("StatusOf(error of status %d) = %d", s, got)
		}
	}
	// nic's sentinels map to their statuses and back.
	for _, e := range []error{verbs.ErrInvalid, verbs.ErrBusy, verbs.ErrNoMemory, verbs.ErrQueueFull, verbs.ErrInvalidState,
		verbs.ErrNotSupported, verbs.ErrPermission, verbs.ErrDestroyed, verbs.ErrNoProvider, verbs.ErrClosed, verbs.ErrCQOverrun} {
		err := ErrorOf(OpAllocPD, StatusOf(errors.Join(errors.New("context"), e)), "x")
		if !errors.Is(err, e) {
			t.Errorf("%v did not survive the wire: %v", e, err)
		}
	}
	if err := ErrorOf(OpAllocPD, StatusOf(ErrLimit), "x"); !errors.Is(err, ErrLimit) || !errors.Is(err, verbs.ErrNoMemory) {
		t.Errorf("a limit error is %v, want ErrLimit and verbs.ErrNoMemory", err)
	}
}

func TestSendWQERoundTrip(t *testing.T) {
	slot := make([]byte, SendSlotSize(4, 64))
	sgl := make([]verbs.SGE, 4)
	inline := make([]byte, 64)
	wr := verbs.SendWR{ID: 1 << 60, Opcode: verbs.WRAtomicCmpSwp, Flags: verbs.SendSignaled | verbs.SendFence,
		SGL: []verbs.SGE{{Addr: 1 << 40, Length: 8, LKey: 0x1234}, {Addr: 3, Length: 4, LKey: 5}}, Imm: 6, InvRKey: 7,
		RemoteAddr: 8 << 33, RKey: 9, CompareAdd: 10, Swap: 11, RemoteQPN: 12, RemoteQKey: 13}
	if err := PutSendWQE(slot, &wr, 77, 0); err != nil {
		t.Fatal(err)
	}
	var got verbs.SendWR
	ah, err := DecodeSendWQE(slot, &got, sgl, inline)
	if err != nil || ah != 77 || !reflect.DeepEqual(got, wr) {
		t.Fatalf("send WQE: %+v ah %d %v\nwant %+v", got, ah, err, wr)
	}
	// FLUSH: its length, type and level ride in compare_add and swap.
	fw := verbs.SendWR{ID: 3, Opcode: verbs.WRFlush, Flags: verbs.SendSignaled, RemoteAddr: 1 << 20, RKey: 5,
		FlushType: verbs.FlushPersistent, FlushLevel: verbs.FlushMR, FlushLen: 1 << 31}
	if err := PutSendWQE(slot, &fw, 0, 0); err != nil {
		t.Fatal(err)
	}
	if le.Uint64(slot[sendCompareAdd:]) != 1<<31 || le.Uint64(slot[sendSwap:]) != 0x102 {
		t.Fatalf("FLUSH slot words %#x %#x, want 0x80000000 0x102", le.Uint64(slot[sendCompareAdd:]), le.Uint64(slot[sendSwap:]))
	}
	fw.SGL = []verbs.SGE{} // decoded into the SGE buffer, empty
	if _, err := DecodeSendWQE(slot, &got, sgl, inline); err != nil || !reflect.DeepEqual(got, fw) {
		t.Fatalf("FLUSH WQE: %+v %v\nwant %+v", got, err, fw)
	}
	le.PutUint64(slot[sendSwap:], 0x10002)
	if _, err := DecodeSendWQE(slot, &got, sgl, inline); err == nil {
		t.Error("DecodeSendWQE: FLUSH with bits beyond type and level accepted")
	}
	// Inline: the data in the payload, no SGEs.
	iw := verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendInline, SGL: wr.SGL}
	n := copy(SendPayload(slot), "inline bytes")
	if err := PutSendWQE(slot, &iw, 0, n); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeSendWQE(slot, &got, sgl, inline); err != nil || string(got.Inline) != "inline bytes" || got.SGL != nil {
		t.Fatalf("inline WQE: %+v %v", got, err)
	}
	// What does not fit is refused on both sides.
	if err := PutSendWQE(slot, &verbs.SendWR{SGL: make([]verbs.SGE, 9)}, 0, 0); err == nil {
		t.Error("PutSendWQE: 9 SGEs fit a slot of 4 (and 64 inline bytes)")
	}
	PutSendWQE(slot, &wr, 0, 0)
	if _, err := DecodeSendWQE(slot, &got, sgl[:0:1], inline); err == nil {
		t.Error("DecodeSendWQE: more SGEs than the buffer holds accepted")
	}
}

func TestRecvWQEAndWCRoundTrip(t *testing.T) {
	slot := make([]byte, RecvSlotSize(3))
	wr := verbs.RecvWR{ID: 42, SGL: []verbs.SGE{{Addr: 1, Length: 2, LKey: 3}, {Addr: 4, Length: 5, LKey: 6}, {Addr: 7, Length: 8, LKey: 9}}}
	if err := PutRecvWQE(slot, &wr); err != nil {
		t.Fatal(err)
	}
	var got verbs.RecvWR
	if err := DecodeRecvWQE(slot, &got, make([]verbs.SGE, 3)); err != nil || !reflect.DeepEqual(got, wr) {
		t.Fatalf("recv WQE %+v %v", got, err)
	}
	wc := verbs.WC{WRID: 1 << 63, Status: verbs.WCRetryExcErr, Opcode: verbs.WCRecvRDMAWithImm, VendorErr: 3, ByteLen: 4,
		Imm: 5, InvRKey: 6, QPN: 7, SrcQP: 8, Flags: verbs.WCFlagGRH | verbs.WCFlagWithImm, PKeyIndex: 9, SL: 2}
	wslot := make([]byte, WCSlotLen)
	PutWC(wslot, &wc)
	var gwc verbs.WC
	GetWC(wslot, &gwc)
	if gwc != wc {
		t.Fatalf("WC %+v, want %+v", gwc, wc)
	}
}

func TestRings(t *testing.T) {
	l := RingLayout{SQSlots: 8, SQSlotSize: SendSlotSize(2, 0), SQCap: 5, RQSlots: 4, RQSlotSize: RecvSlotSize(1), RQCap: 4}
	mem := make([]byte, l.Size())
	w, err := NewWorkRings(mem, l)
	if err != nil {
		t.Fatal(err)
	}
	// Slots wrap; the header lines are distinct.
	if &w.SQ.Slot(0)[0] != &w.SQ.Slot(8)[0] || &w.SQ.Slot(7)[0] == &w.RQ.Slot(0)[0] {
		t.Error("slot arithmetic")
	}
	if &w.RQ.Slot(3)[len(w.RQ.Slot(3))-1] != &mem[len(mem)-1] {
		t.Error("the last receive slot does not end the memory")
	}
	for _, tc := range []struct {
		prod, cons uint32
		ok         bool
		n          uint32
	}{{0, 0, true, 0}, {8, 0, true, 8}, {9, 0, false, 0}, {3, 5, false, 0}, {2, 1<<32 - 3, true, 5}} {
		n, err := w.SQ.CheckProducer(tc.prod, tc.cons)
		if (err == nil) != tc.ok || n != tc.n {
			t.Errorf("CheckProducer(%d, %d) = %d, %v", tc.prod, tc.cons, n, err)
		}
	}
	if _, err := NewWorkRings(mem[:len(mem)-1], l); err == nil {
		t.Error("ring memory one byte short accepted")
	}
	for _, bad := range []RingLayout{
		{SQSlots: 3, SQSlotSize: 64, SQCap: 3},
		{SQSlots: 4, SQSlotSize: 64, SQCap: 5},
		{SQSlots: 4, SQSlotSize: 65, SQCap: 4},
		{SQSlots: 4, SQSlotSize: 32, SQCap: 4},
		{RQSlots: MaxRingSlots * 2, RQSlotSize: 64, RQCap: 1},
	} {
		if bad.Validate() == nil {
			t.Errorf("layout %+v accepted", bad)
		}
	}
	if RingSlots(0) != 0 || RingSlots(1) != 1 || RingSlots(5) != 8 || RingSlots(64) != 64 {
		t.Error("RingSlots")
	}
}

// TestBindWQERoundTrip: a BIND_MW WR crosses the ring with its bind in the
// WQE's other fields and comes out as it went in.
func TestBindWQERoundTrip(t *testing.T) {
	slot := make([]byte, SendSlotSize(2, 0))
	wr := verbs.SendWR{ID: 3, Opcode: verbs.WRBindMW, Flags: verbs.SendSignaled, Bind: verbs.MWBind{
		Window: 0xabcdef01, MR: 0x12345678, Addr: 1 << 45, Length: 1 << 33, Access: memory.RemoteRead | memory.ZeroBased,
		RKey: 0xabcdef02,
	}}
	if err := PutSendWQE(slot, &wr, 0, 0); err != nil {
		t.Fatal(err)
	}
	var got verbs.SendWR
	_, err := DecodeSendWQE(slot, &got, make([]verbs.SGE, 2), nil)
	if len(got.SGL) == 0 {
		got.SGL = nil // an empty list from the decoder's storage
	}
	if err != nil || !reflect.DeepEqual(got, wr) {
		t.Fatalf("bind WQE: %+v %v\nwant %+v", got, err, wr)
	}
	// Rights that do not fit 32 bits are refused by the bind, not
	// truncated into valid ones.
	le.PutUint64(slot[sendSwap:], 1<<32|uint64(memory.RemoteRead))
	if _, err := DecodeSendWQE(slot, &got, make([]verbs.SGE, 2), nil); err != nil || got.Bind.Access&memory.RemoteRead == 0 || got.Bind.Access == memory.RemoteRead {
		t.Fatalf("bind WQE with 64-bit rights: access %v %v", got.Bind.Access, err)
	}
}
