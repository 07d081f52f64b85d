package proto

import (
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// OPEN's reply is in the client's version: a version 1 client (the C
// libraries) reads the layout it knows, without the transport, to the last
// byte; a version 2 client gets the transport and node type of an iWARP
// device.
func TestOpenReplyTransportByVersion(t *testing.T) {
	attr := verbs.DeviceAttr{FwVer: "x", MaxQP: 4, Transport: verbs.TransportIWARP, NodeType: verbs.NodeRNIC}
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
	if err := r.Done(); err != nil || got.Attr.Transport != verbs.TransportIWARP || got.Attr.NodeType != verbs.NodeRNIC {
		t.Fatalf("version 2: %v, transport %v, node type %v; want iWARP, RNIC", err, got.Attr.Transport, got.Attr.NodeType)
	}
}

// CM_GET_REQUEST's result carries the request's connection parameters
// from VersionConnParam on; an older client reads the layout it knows to
// the last byte.
func TestCMRequestInfoParamByVersion(t *testing.T) {
	p := ibv.ConnParam{ResponderResources: 2, InitiatorDepth: 3, RetryCount: 6, RNRRetryCount: 5}
	enc := func(v uint32) []byte {
		w := NewWriter(nil)
		(&CMRequestInfo{Version: v, Request: 9, PrivateData: []byte("pd"), Param: p}).Encode(w)
		return w.Bytes()
	}
	old, cur := enc(VersionConnParam-1), enc(VersionConnParam)
	if len(cur) != len(old)+4 {
		t.Fatalf("version %d result %d bytes, older %d: want 4 more", VersionConnParam, len(cur), len(old))
	}
	for _, c := range []struct {
		v    uint32
		b    []byte
		want ibv.ConnParam
	}{{VersionConnParam - 1, old, ibv.ConnParam{}}, {VersionConnParam, cur, p}} {
		got := CMRequestInfo{Version: c.v}
		r := NewReader(c.b)
		got.Decode(r)
		if err := r.Done(); err != nil || got.Request != 9 || got.Param != c.want {
			t.Errorf("version %d: %v, request %d, param %+v; want 9, %+v", c.v, err, got.Request, got.Param, c.want)
		}
	}
}
