package proto

import (
	"bytes"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// Golden bodies: what the Go encoder writes for a few messages of each
// kind, kept in testdata/golden. The Go decoder must read each back to
// the same value; the C libraries' golden test (dropin/tests/golden)
// checks the fields of those it decodes, and their fuzzers take them all
// as seeds. -update rewrites them after a deliberate change of the wire
// (which also bumps Version).
var updateGolden = flag.Bool("update", false, "rewrite testdata/golden from the table")

// goldenDir is where the bodies live; the C side reads them there too.
const goldenDir = "testdata/golden"

// golden is one body: its file (op.kind.variant.bin) and its value.
// Slots (a completion, a send and a receive WQE) are written by their
// own encoders, not as messages.
type golden struct {
	file string
	m    Message
	slot func() []byte
}

// The values are distinctive (no two fields alike where it matters), so
// a field read at the wrong offset shows. dropin/tests/golden/golden.c
// checks the same numbers: change both together.
var goldenPlace = RingPlace{Chunk: 3, ChunkLen: ArenaChunkLen, Offset: 5 * ArenaPage}

func goldenTable() []golden {
	gid2 := netip.MustParseAddr("::ffff:127.0.0.2")
	av := verbs.AddressVector{DGID: gid2, SGIDIndex: 1, FlowLabel: 0x12345, HopLimit: 64, TrafficClass: 0x20,
		SL: 3, PortNum: 1, DMAC: [6]byte{2, 0, 0, 0, 0, 9}, SrcPort: 49153}
	qpCap := verbs.QPCap{MaxSendWR: 128, MaxRecvWR: 256, MaxSendSGE: 4, MaxRecvSGE: 2, MaxInlineData: 220}
	return []golden{
		{file: "OPEN.request.1", m: &OpenReq{Version: Version, Name: "rnic0"}},
		{file: "OPEN.reply.1", m: &OpenReply{Version: Version, Name: "rnic1", Attr: verbs.DeviceAttr{
			FwVer: "golden 1.0", NodeGUID: 0x0102030405060708, SysImageGUID: 0x1112131415161718,
			MaxMRSize: 1 << 40, PageSizeCap: 0xfffff000, VendorID: 0x1234, VendorPartID: 0x5678, HWVer: 9,
			MaxQP: 4096, MaxQPWR: 16384, DeviceCapFlags: 0x21c00, MaxSGE: 32, MaxSGERd: 31, MaxCQ: 2048,
			MaxCQE: 65536, MaxMR: 8192, MaxPD: 1024, MaxQPRdAtom: 16, MaxResRdAtom: 256, MaxQPInitRdAtom: 17,
			AtomicCap: 1, MaxMW: 0, MaxAH: 512, MaxSRQ: 128, MaxSRQWR: 4095, MaxSRQSGE: 30, MaxPKeys: 1,
			LocalCAAckDelay: 15, PhysPortCnt: 1, MaxInlineData: 256, MaxMsgSize: 1 << 31,
			MaxMcastGrp: 8191, MaxMcastQPAttach: 55, MaxTotalMcastQPAttach: 0x6ffff,
			Transport: verbs.TransportIWARP, NodeType: verbs.NodeRNIC},
			Port: verbs.PortAttr{State: verbs.PortActive, MaxMTU: verbs.MTU(5), ActiveMTU: verbs.MTU1024, GIDTblLen: 16,
				MaxMsgSize: 1 << 30, PKeyTblLen: 1, PhysState: 5, LinkLayer: verbs.LinkLayerEthernet, LinkMTU: 1500,
				BadPKeyCntr: 0xFFFF, QKeyViolCntr: 7},
			GIDs: []netip.Addr{netip.MustParseAddr("fe80::1"), gid2}}},
		{file: "ALLOC_PD.reply.1", m: &Handle{H: 0x01020304}},
		{file: "ALLOC_MW.request.1", m: &AllocMWReq{PD: 2, Type: 2}},
		{file: "ALLOC_MW.reply.1", m: &AllocMWReply{MW: 14, RKey: 0x00abcd17}},
		{file: "REG_MR.request.1", m: &RegMRReq{PD: 2, Access: 0xf, FileSize: 1 << 21, Offset: 4096, Length: 8192, IOVA: 0x7f0000001000}},
		{file: "REG_MR.reply.1", m: &RegMRReply{MR: 5, LKey: 0x1100, RKey: 0x2200, Addr: 0x7f0000001000, Len: 8192}},
		{file: "CREATE_CQ_ON.request.1", m: &CreateCQOnReq{CQE: 63, Channel: 7}},
		{file: "CREATE_CQ_ON.reply.1", m: &CreateCQOnReply{CreateCQReply: CreateCQReply{CQ: 9,
			Ring: CQLayout{Slots: 64, Cap: 63}, Place: goldenPlace}, Slot: 499}},
		{file: "CREATE_CHANNEL.reply.1", m: &CreateChannelReply{Channel: 7, Place: goldenPlace}},
		{file: "CREATE_QP.request.1", m: &CreateQPReq{PD: 2, SendCQ: 9, RecvCQ: 10, SRQ: 0, Type: verbs.QPTypeRC, SigAll: true, Cap: qpCap}},
		{file: "CREATE_QP.reply.1", m: &CreateQPReply{QP: 11, QPN: 0x000123, Cap: qpCap,
			Ring:  RingLayout{SQSlots: 128, SQSlotSize: 320, SQCap: 128, RQSlots: 256, RQSlotSize: 64, RQCap: 256},
			Place: goldenPlace}},
		{file: "CREATE_SRQ.reply.1", m: &CreateSRQReply{SRQ: 12,
			Ring: RingLayout{RQSlots: 512, RQSlotSize: 128, RQCap: 500}, Place: RingPlace{Chunk: 4, Own: true, ChunkLen: 80 * ArenaPage}}},
		{file: "CREATE_AH.reply.1", m: &CreateAHReply{AH: 13, AV: av}},
		{file: "MODIFY_QP.request.1", m: &ModifyQPReq{QP: 11, Mask: 0x1fffff, Attr: verbs.QPAttr{State: verbs.QPState(3),
			PathMTU: verbs.MTU1024, QKey: 0x11111111, RQPSN: 0xabcdef, SQPSN: 0x123456, DestQPN: 0x000456,
			AccessFlags: 0xe, Cap: qpCap, AV: av, PKeyIndex: 0, MaxRdAtomic: 8, MaxDestRdAtomic: 9, MinRNRTimer: 12,
			PortNum: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 6, PathMigState: verbs.MigArmed}}},
		{file: "ATTACH_MCAST.request.1", m: &McastReq{QP: 11, GID: netip.MustParseAddr("::ffff:230.1.2.3").As16(), LID: 0xc001}},
		{file: "EVENT.event.1", m: &Event{Type: verbs.AsyncEvent(1), Object: ObjectQP, Handle: 11, Port: 1}},
		{file: "CM_RESULT.event.1", m: &AsyncResult{Token: 21, Status: StatusOK, Body: []byte{9, 0, 0, 0}}},
		{file: "CM_RESULT.event.2", m: &AsyncResult{Token: 22, Status: StatusRejected, Msg: "rejected",
			Body: []byte{28, 0, 4, 0, 0, 0, 'n', 'o', 'p', 'e'}}},
		{file: "CM_GET_REQUEST.result.1", m: &CMRequestInfo{Request: 9, PrivateData: []byte("hello"),
			Local: netip.MustParseAddrPort("[::ffff:127.0.0.2]:7174"), Remote: netip.MustParseAddrPort("[::ffff:127.0.0.3]:4242"),
		}},
		{file: "CM_CONNECT.result.1", m: &CMConnInfo{Conn: 3, PrivateData: []byte("pd"),
			Local: netip.MustParseAddrPort("[::ffff:127.0.0.2]:1"), Remote: netip.MustParseAddrPort("[::ffff:127.0.0.3]:2"), RemoteQPN: 0x11}},
		{file: "CM_CONNECT_EXT.request.1", m: &CMConnectReq{Token: 23, QP: 0x000457, Addr: netip.MustParseAddr("127.0.0.3"), Port: 7174,
			PrivateData: []byte("ext")}},
		{file: "CM_INIT_QP_ATTR.reply.1", m: &CMQPAttr{A: ibv.ExternalQPAttrs{
			AV:      verbs.AddressVector{DGID: gid2, SGIDIndex: 1, FlowLabel: 0x12345, HopLimit: 64, TrafficClass: 3, PortNum: 1},
			PathMTU: verbs.MTU1024, DestQPN: 0x000456, RQPSN: 0xabcdef, SQPSN: 0x123456, MaxDestRdAtomic: 9, MaxRdAtomic: 8,
			MinRNRTimer: 12, Timeout: 14, RetryCnt: 7, RNRRetry: 6}}},
		{file: "CM_CONNECT.result.2", m: &CMRejectInfo{Reason: 28, PrivateData: []byte("nope")}},
		{file: "CM_RESOLVE_UD.result.1", m: &CMUDPeerInfo{QPN: 0x123, QKey: 0x01234567, PrivateData: []byte("ud"),
			Local: netip.MustParseAddrPort("[::ffff:127.0.0.2]:1"), Remote: netip.MustParseAddrPort("[::ffff:127.0.0.3]:7174"),
			AV: verbs.AddressVector{DGID: gid2, SGIDIndex: 1, HopLimit: 64, PortNum: 1}}},
		{file: "slot.wc.1", slot: func() []byte {
			s := make([]byte, WCSlotLen)
			PutWC(s, &verbs.WC{WRID: 0x0102030405060708, Status: verbs.WCStatus(5), Opcode: verbs.WCOpcode(128),
				Flags: verbs.WCFlags(3), SL: 2, VendorErr: 0x44, ByteLen: 4096, Imm: 0xdeadbeef, QPN: 0x123,
				SrcQP: 0x456, PKeyIndex: 0x77})
			return s
		}},
		{file: "slot.send.1", slot: func() []byte {
			s := make([]byte, SendSlotSize(2, 0))
			wr := verbs.SendWR{ID: 0x1112131415161718, Opcode: verbs.WROpcode(4), Flags: verbs.SendFlags(2),
				Imm: 0x0a0b0c0d, InvRKey: 0x21, RemoteAddr: 0x7f0000002000, RKey: 0x2200, CompareAdd: 5, Swap: 6,
				RemoteQPN: 0x789, RemoteQKey: 0x11111111,
				SGL: []verbs.SGE{{Addr: 0x7f0000001000, Length: 100, LKey: 0x1100}, {Addr: 0x7f0000003000, Length: 200, LKey: 0x1101}}}
			if err := PutSendWQE(s, &wr, 13, 0); err != nil {
				panic(err)
			}
			return s
		}},
		{file: "slot.bind.1", slot: func() []byte {
			s := make([]byte, SendSlotSize(1, 0))
			wr := verbs.SendWR{ID: 0x21, Opcode: verbs.WRBindMW, Flags: verbs.SendFlags(2), Bind: verbs.MWBind{
				Window: 0xabcdef01, RKey: 0xabcdef02, MR: 0x1100, Addr: 0x7f0000005000, Length: 4096, Access: 6}}
			if err := PutSendWQE(s, &wr, 0, 0); err != nil {
				panic(err)
			}
			return s
		}},
		{file: "slot.recv.1", slot: func() []byte {
			s := make([]byte, RecvSlotSize(1))
			if err := PutRecvWQE(s, &verbs.RecvWR{ID: 77, SGL: []verbs.SGE{{Addr: 0x7f0000004000, Length: 300, LKey: 0x1102}}}); err != nil {
				panic(err)
			}
			return s
		}},
	}
}

func (g golden) encode() []byte {
	if g.slot != nil {
		return g.slot()
	}
	w := NewWriter(nil)
	g.m.Encode(w)
	return w.Bytes()
}

func TestGolden(t *testing.T) {
	if *updateGolden {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{}
	for _, g := range goldenTable() {
		path := filepath.Join(goldenDir, g.file+".bin")
		want[filepath.Base(path)] = true
		enc := g.encode()
		if *updateGolden {
			if err := os.WriteFile(path, enc, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./nic/rnicd/proto -run TestGolden -update writes it)", err)
		}
		if !bytes.Equal(got, enc) {
			t.Errorf("%s: the encoder writes % x, the golden file holds % x", g.file, enc, got)
		}
		if g.m == nil {
			continue
		}
		back := reflect.New(reflect.TypeOf(g.m).Elem()).Interface().(Message)
		r := NewReader(got)
		back.Decode(r)
		if err := r.Done(); err != nil {
			t.Errorf("%s: decode: %v", g.file, err)
		} else if !reflect.DeepEqual(back, g.m) {
			t.Errorf("%s: decodes to\n%+v\nwant\n%+v", g.file, back, g.m)
		}
	}
	// No stale file is left for the C side to read.
	ents, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !want[e.Name()] {
			t.Errorf("%s/%s is in no row of the golden table", goldenDir, e.Name())
		}
	}
}

// The golden slots decode to what was written.
func TestGoldenSlots(t *testing.T) {
	var wc verbs.WC
	GetWC(goldenBody(t, "slot.wc.1"), &wc)
	if wc.WRID != 0x0102030405060708 || wc.Imm != 0xdeadbeef || wc.PKeyIndex != 0x77 || wc.SL != 2 {
		t.Errorf("golden completion decodes as %+v", wc)
	}
	var wr verbs.SendWR
	ah, err := DecodeSendWQE(goldenBody(t, "slot.send.1"), &wr, make([]verbs.SGE, 4), make([]byte, 64))
	if err != nil || ah != 13 || wr.RKey != 0x2200 || len(wr.SGL) != 2 || wr.SGL[1].LKey != 0x1101 {
		t.Errorf("golden send WQE decodes as %+v, AH %d (%v)", wr, ah, err)
	}
}

// goldenBody returns the encoding of the golden table's row named file.
func goldenBody(t *testing.T, file string) []byte {
	for _, g := range goldenTable() {
		if g.file == file {
			return g.encode()
		}
	}
	t.Fatalf("no golden row %s", file)
	return nil
}
