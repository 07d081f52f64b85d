package capcheck

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/pcap"
)

var (
	hostA = netip.MustParseAddr("192.0.2.1")
	hostB = netip.MustParseAddr("192.0.2.2")
	t0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// frame builds an RC frame from src to dst.
func frame(src, dst netip.Addr, op wire.Opcode, psn uint32, syn wire.Syndrome, length uint32) []byte {
	e := wire.Encap{SrcMAC: [6]byte{2}, DstMAC: [6]byte{2}, Src: src, Dst: dst, TTL: 64, DF: true,
		SrcPort: 49152, DstPort: wire.UDPPort}
	h := wire.Headers{BTH: wire.BTHFields{Opcode: op, PKey: wire.DefaultPKey, DestQP: 0x11, PSN: psn},
		RETH: wire.RETHFields{Length: length}, AETH: wire.AETHFields{Syndrome: syn}}
	n := 0
	if op.Info().Payload {
		n = 4
	}
	if fp := op.Info().FixedPayload; fp != 0 {
		n = fp
	}
	return wire.AppendFrame(nil, &e, &h, make([]byte, n))
}

func req(op wire.Opcode, psn, length uint32) []byte { return frame(hostA, hostB, op, psn, 0, length) }
func resp(op wire.Opcode, psn uint32, syn wire.Syndrome) []byte {
	return frame(hostB, hostA, op, psn, syn, 0)
}

func capture(fs ...[]byte) []pcap.Frame {
	out := make([]pcap.Frame, len(fs))
	for i, f := range fs {
		out[i] = pcap.Frame{Timestamp: t0.Add(time.Duration(i) * time.Microsecond), Data: f, Length: len(f)}
	}
	return out
}

func TestCausalCapturePasses(t *testing.T) {
	ack := wire.ACKSyndrome(wire.CreditsUnlimited)
	fs := capture(
		req(wire.RCWriteFirst, 10, 3000), req(wire.RCWriteMiddle, 11, 0), req(wire.RCWriteLast, 12, 0),
		resp(wire.RCAck, 12, ack),
		req(wire.RCReadRequest, 13, 2048),
		resp(wire.RCReadResponseFirst, 13, ack), resp(wire.RCReadResponseLast, 14, ack),
		req(wire.RCFetchAdd, 15, 0), resp(wire.RCAtomicAck, 15, ack),
		req(wire.RCSendOnly, 17, 0), // 16 was lost: the responder NAKs with the PSN it expects
		resp(wire.RCAck, 16, wire.NAKSyndrome(wire.NAKPSNSeqError)),
	)
	if r := Check(fs, 0); len(r.Violations) != 0 || r.Requests != 6 || r.Responses != 5 {
		v := r
		t.Fatalf("violations in a causal capture: %v", v)
	}
}

func TestAnswersBeforeQuestions(t *testing.T) {
	ack := wire.ACKSyndrome(wire.CreditsUnlimited)
	cases := map[string][]pcap.Frame{
		"ack first":              capture(resp(wire.RCAck, 5, ack), req(wire.RCSendOnly, 5, 0)),
		"atomic ack first":       capture(resp(wire.RCAtomicAck, 7, ack), req(wire.RCCmpSwap, 7, 0)),
		"nak first":              capture(resp(wire.RCAck, 9, wire.NAKSyndrome(wire.NAKRemoteAccess)), req(wire.RCWriteOnly, 9, 4)),
		"read response first":    capture(resp(wire.RCReadResponseOnly, 3, ack), req(wire.RCReadRequest, 3, 4)),
		"ack in other direction": capture(req(wire.RCSendOnly, 5, 0), frame(hostA, hostB, wire.RCAck, 5, ack, 0)),
		"seq nak, nothing sent":  capture(resp(wire.RCAck, 16, wire.NAKSyndrome(wire.NAKPSNSeqError))),
	}
	for name, fs := range cases {
		want := 1
		if name == "ack in other direction" {
			want = 2
		}
		if v := Check(fs, 0).Violations; len(v) != 1 || v[0].Frame != want || !strings.Contains(v[0].Why, "answers no request") {
			t.Errorf("%s: %v", name, v)
		}
	}
	back := capture(req(wire.RCSendOnly, 5, 0), resp(wire.RCAck, 5, ack))
	back[1].Timestamp = t0.Add(-time.Nanosecond)
	if v := Check(back, 0).Violations; len(v) != 1 || v[0].Frame != 2 || !strings.Contains(v[0].Why, "before the previous") {
		t.Errorf("timestamp going back: %v", v)
	}
}

// FuzzCheck: any bytes, as frames of a capture, give a result, never a
// panic.
func FuzzCheck(f *testing.F) {
	ack := wire.ACKSyndrome(wire.CreditsUnlimited)
	f.Add(req(wire.RCReadRequest, 13, 2048), resp(wire.RCReadResponseMiddle, 14, ack))
	f.Add(resp(wire.RCAck, 16, wire.NAKSyndrome(wire.NAKPSNSeqError)), req(wire.RCSendOnly, 0xFFFFFF, 0))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		res := Check(capture(a, b, a), 0)
		if len(res.Violations) > 3 || res.Requests+res.Responses > 3 {
			t.Fatalf("%+v from 3 frames", res)
		}
	})
}
