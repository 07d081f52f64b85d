package proto

import (
	"testing"

	"github.com/rnic/rnic/nic"
)

// OPEN's reply is in the client's version: a version 1 client (the C
// libraries) reads the layout it knows, without the transport, to the last
// byte; a version 2 client gets the transport and node type of an iWARP
// device.
func TestOpenReplyTransportByVersion(t *testing.T) {
	attr := nic.DeviceAttr{FwVer: "x", MaxQP: 4, Transport: nic.TransportIWARP, NodeType: nic.NodeRNIC}
	enc := func(v uint32) []byte {
		w := NewWriter(nil)
		(&OpenReply{Version: v, Name: "iw0", Attr: attr}).Encode(w)
		return w.Bytes()
	}
	v1, v2 := enc(1), enc(VersionTransport)
	if len(v2) != len(v1)+2 {
		t.Fatalf("version 2 reply %d bytes, version 1 %d: want 2 more (transport, node type)", len(v2), len(v1))
	}
	var got OpenReply
	r := NewReader(v1)
	got.Decode(r)
	if err := r.Done(); err != nil || got.Attr.Transport != 0 || got.Attr.NodeType != 0 {
		t.Fatalf("version 1: %v, transport %v, node type %v; want the old layout, neither", err, got.Attr.Transport, got.Attr.NodeType)
	}
	got = OpenReply{}
	r = NewReader(v2)
	got.Decode(r)
	if err := r.Done(); err != nil || got.Attr.Transport != nic.TransportIWARP || got.Attr.NodeType != nic.NodeRNIC {
		t.Fatalf("version 2: %v, transport %v, node type %v; want iWARP, RNIC", err, got.Attr.Transport, got.Attr.NodeType)
	}
}
