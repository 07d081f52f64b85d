package mad

import (
	"bytes"
	"net/netip"
	"reflect"
	"testing"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/pcap"
)

// goldenMADs returns the CM MADs (with their IP source) of a capture of
// real rxe peers (the frames tshark -Y infiniband.mad finds in
// testdata/captures/rxe-rping.pcap and rxe-write-bw-cm-4096.pcap).
func goldenMADs(t testing.TB, path string) (mads [][]byte) {
	frames, err := pcap.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		var fr wire.Frame
		if err := fr.Decode(f.Data, wire.UDPPort); err != nil || !fr.VerifyICRC() {
			t.Fatalf("golden frame does not decode: %v", err)
		}
		mads = append(mads, append([]byte(nil), fr.Packet.Payload()...))
	}
	return mads
}

// TestGoldenRping decodes rxe's rping exchange (REQ, REP, RTU, DREQ, DREP)
// with the values tshark shows for it, and re-encodes each message to the
// same 256 bytes.
func TestGoldenRping(t *testing.T) {
	mads := goldenMADs(t, "testdata/rxe-rping-cm.pcap")
	want := []AttrID{AttrREQ, AttrREP, AttrRTU, AttrDREQ, AttrDREP}
	if len(mads) != len(want) {
		t.Fatalf("%d MADs, want %d", len(mads), len(want))
	}
	for i, b := range mads {
		m, err := ParseMAD(b)
		if err != nil || m.AttrID() != want[i] || m.TID() != 0x0000000241418368 {
			t.Fatalf("MAD %d: %v attr %v tid %#x", i, err, m.AttrID(), m.TID())
		}
		out := make(MAD, MADLen)
		switch m.AttrID() {
		case AttrREQ:
			var r REQ
			r.Decode(m)
			if r.LocalCommID != 0x68834141 || r.ServiceID != 0x1061c06 || r.LocalCAGUID != 0x505400fffe4d000c ||
				r.LocalQPN != 0x20 || r.StartingPSN != 0x83cc95 || r.RemoteCMResponseTimeout != 20 || r.RetryCount != 7 ||
				r.PathMTU != 3 || r.RNRRetryCount != 7 || r.MaxCMRetries != 15 || r.PrimaryLocalLID != 0xFFFF ||
				r.PrimaryLocalGID != netip.MustParseAddr("::ffff:10.77.0.12") || r.FlowLabel != 0x8cce0 ||
				r.HopLimit != 64 || r.LocalACKTimeout != 19 || r.ResponderResources != 1 || r.InitiatorDepth != 1 {
				t.Fatalf("REQ %+v", r)
			}
			var h CMAHeader
			if err := h.Decode(r.PrivateData); err != nil || h.SrcPort != 0xcbe6 || h.Src != netip.MustParseAddr("10.77.0.12") ||
				h.Dst != netip.MustParseAddr("10.77.0.11") || h.IPVersion != 4 {
				t.Fatalf("cma_hdr %+v %v", h, err)
			}
			if ps, port, ok := ServicePort(r.ServiceID); !ok || ps != PortSpaceTCP || port != 7174 {
				t.Fatalf("service %#x", r.ServiceID)
			}
			var hb [CMAHeaderLen]byte
			h.Encode(hb[:])
			if !bytes.Equal(hb[:], r.PrivateData[:CMAHeaderLen]) {
				t.Fatal("cma_hdr re-encodes differently")
			}
			r.Encode(out, m.TID())
		case AttrREP:
			var r REP
			r.Decode(m)
			if r.LocalCommID != 0x89fde697 || r.RemoteCommID != 0x68834141 || r.StartingPSN != 0x8be6aa ||
				r.TargetACKDelay != 15 || r.RNRRetryCount != 7 || r.LocalCAGUID != 0x505400fffe4d000b {
				t.Fatalf("REP %+v", r)
			}
			r.Encode(out, m.TID())
		case AttrRTU:
			var r RTU
			r.Decode(m)
			r.Encode(out, m.TID())
		case AttrDREQ:
			var r DREQ
			r.Decode(m)
			if r.RemoteQPN != 0x20 {
				t.Fatalf("DREQ %+v", r)
			}
			r.Encode(out, m.TID())
		case AttrDREP:
			var r DREP
			r.Decode(m)
			r.Encode(out, m.TID())
		}
		if !bytes.Equal(out, b[:MADLen]) {
			t.Errorf("%v re-encodes differently:\n got %x\nwant %x", m.AttrID(), out, b[:MADLen])
		}
	}
	// perftest -R: two connections, each REQ/REP/RTU (+ DREQ/DREP).
	for _, b := range goldenMADs(t, "testdata/rxe-write-bw-cm.pcap") {
		if _, err := ParseMAD(b); err != nil {
			t.Fatalf("perftest MAD: %v", err)
		}
	}
}

// TestRoundTrip encodes each message and decodes it back.
func TestRoundTrip(t *testing.T) {
	m := make(MAD, MADLen)
	rej := REJ{LocalCommID: 1, RemoteCommID: 2, MessageRejected: MsgREP, Reason: RejConsumerReject,
		ARI: []byte{1, 2, 3}, PrivateData: []byte("no")}
	if err := rej.Encode(m, 7); err != nil {
		t.Fatal(err)
	}
	var r2 REJ
	r2.Decode(m)
	if r2.Reason != RejConsumerReject || r2.MessageRejected != MsgREP || !bytes.Equal(r2.ARI, rej.ARI) ||
		!bytes.HasPrefix(r2.PrivateData, []byte("no")) || len(r2.PrivateData) != REJPrivateDataLen || m.TID() != 7 {
		t.Fatalf("REJ %+v", r2)
	}
	mra := MRA{LocalCommID: 3, RemoteCommID: 4, MessageMRAed: MsgREQ, ServiceTimeout: 21}
	mra.Encode(m, 8)
	var m2 MRA
	m2.Decode(m)
	if m2.ServiceTimeout != 21 || m2.LocalCommID != 3 || m.AttrID() != AttrMRA {
		t.Fatalf("MRA %+v", m2)
	}
	req := REQ{LocalCommID: 9, ServiceID: ServiceID(PortSpaceTCP, 1), LocalQPN: 0xABCDEF, StartingPSN: 0x123456,
		TransportType: 1, EndToEndFlowControl: true, RDCExists: true, SRQ: true, SubnetLocal: true, SL: 5,
		FlowLabel: 0xFFFFF, PacketRate: 0x3F, PathMTU: 5, PrimaryLocalGID: netip.MustParseAddr("fe80::1"),
		PrimaryRemoteGID: netip.MustParseAddr("::ffff:1.2.3.4"), PrivateData: []byte{9}}
	if err := req.Encode(m, 1); err != nil {
		t.Fatal(err)
	}
	var q2 REQ
	q2.Decode(m)
	q2.PrivateData, req.PrivateData = nil, nil
	if !reflect.DeepEqual(q2, req) {
		t.Fatalf("REQ\n got %+v\nwant %+v", q2, req)
	}
	if (&REQ{PrivateData: make([]byte, 93)}).Encode(m, 1) == nil {
		t.Fatal("93 bytes of REQ private data accepted")
	}
}

// FuzzDecode: no MAD makes the parser or any message decoder panic.
func FuzzDecode(f *testing.F) {
	for _, b := range goldenMADs(f, "testdata/rxe-rping-cm.pcap") {
		f.Add(b)
	}
	f.Add(make([]byte, 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMAD(b)
		if err != nil {
			return
		}
		var (
			q  REQ
			p  REP
			u  RTU
			j  REJ
			a  MRA
			d  DREQ
			dp DREP
			h  CMAHeader
			sq SIDRREQ
			sp SIDRREP
		)
		q.Decode(m)
		h.Decode(q.PrivateData)
		p.Decode(m)
		u.Decode(m)
		j.Decode(m)
		a.Decode(m)
		d.Decode(m)
		dp.Decode(m)
		sq.Decode(m)
		h.Decode(sq.PrivateData)
		sp.Decode(m)
	})
}

func TestParseAllocs(t *testing.T) {
	b := goldenMADs(t, "testdata/rxe-rping-cm.pcap")[0]
	var r REQ
	var h CMAHeader
	if n := testing.AllocsPerRun(100, func() {
		m, _ := ParseMAD(b)
		r.Decode(m)
		h.Decode(r.PrivateData)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
