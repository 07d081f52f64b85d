package proto

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

// TestCMUDPeerInfo: the UD resolve result carries what param.ud needs
// (the address vector's GRH fields, port 1) and refuses truncation.
func TestCMUDPeerInfo(t *testing.T) {
	m := CMUDPeerInfo{QPN: 0x123456, QKey: 0x01234567, PrivateData: []byte("ud"),
		Local:  netip.MustParseAddrPort("10.0.0.1:40000"),
		Remote: netip.MustParseAddrPort("10.0.0.2:7174"),
		AV: verbs.AddressVector{DGID: netip.MustParseAddr("::ffff:10.0.0.2"), SGIDIndex: 1, HopLimit: 64,
			TrafficClass: 3, FlowLabel: 0xABCDE, PortNum: 1}}
	w := NewWriter(nil)
	m.Encode(w)
	var got CMUDPeerInfo
	r := NewReader(w.Bytes())
	got.Decode(r)
	if err := r.Done(); err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, got, m)
	}
	for cut := range len(w.Bytes()) {
		r := NewReader(w.Bytes()[:cut])
		new(CMUDPeerInfo).Decode(r)
		if r.Done() == nil {
			t.Fatalf("a %d-byte prefix decoded", cut)
		}
	}
}
