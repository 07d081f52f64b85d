package ladder

import (
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
)

// writeAcks writes a capture of acknowledgements from 192.0.2.2 to QP 0x11
// at 192.0.2.1, one per syndrome, all with PSN 5.
func writeAcks(t *testing.T, syndromes ...wire.Syndrome) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "acks.pcap")
	w, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	e := wire.Encap{DstMAC: [6]byte{2, 0, 0, 0, 0, 1}, SrcMAC: [6]byte{2, 0, 0, 0, 0, 2},
		Src: netip.MustParseAddr("192.0.2.2"), Dst: netip.MustParseAddr("192.0.2.1"), TTL: 64,
		SrcPort: 49152, DstPort: wire.UDPPort}
	for i, s := range syndromes {
		h := wire.Headers{BTH: wire.BTHFields{Opcode: wire.RCAck, PKey: wire.DefaultPKey, DestQP: 0x11, PSN: 5},
			AETH: wire.AETHFields{Syndrome: s, MSN: 1}}
		if err := w.WriteFrame(transport.PcapEpoch.Add(time.Duration(i)*time.Microsecond), wire.AppendFrame(nil, &e, &h, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAckAfterNAK checks what counts as a duplicate acknowledgement: an
// ACK of a PSN that was NAKed is news (the retransmission got through);
// the same ACK again is a duplicate. Classes follow the syndrome.
func TestAckAfterNAK(t *testing.T) {
	ack := wire.ACKSyndrome(wire.CreditsUnlimited)
	path := writeAcks(t, wire.NAKSyndrome(wire.NAKPSNSeqError), ack, ack, wire.RNRNAKSyndrome(3))
	evs, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		class Class
		dup   bool
	}{{ClassNAK, false}, {ClassACK, false}, {ClassACK, true}, {ClassRNR, false}}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d", len(evs), len(want))
	}
	for i, w := range want {
		if evs[i].Class != w.class || evs[i].Dup != w.dup {
			t.Errorf("frame %d (%s): class %s dup %v, want %s %v", i+1, evs[i].Label, evs[i].Class, evs[i].Dup, w.class, w.dup)
		}
	}
}
