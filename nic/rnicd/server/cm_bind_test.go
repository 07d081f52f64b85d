package server_test

import (
	"testing"
	"time"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

// rdma_bind_addr's reservations over the wire: a wildcard bind of port 0
// gets an ephemeral port, another client's bind of it is refused
// (StatusAddrNotAvail: EADDRNOTAVAIL, a wildcard being bound) and another
// client cannot unbind it; the port is free again once its client is gone.
func TestCMBindSessions(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a, b := dial(t, d.Socket), dial(t, d.Socket)
	for _, r := range []*raw{a, b} {
		r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	}
	st, body := a.request(proto.OpCMBind, &proto.CMBindReq{PortSpace: proto.PortSpaceTCP})
	if st != proto.StatusOK {
		t.Fatalf("CM_BIND: status %d (%s)", st, body)
	}
	var rep proto.CMBindReply
	rd := proto.NewReader(body)
	rep.Decode(rd)
	if err := rd.Done(); err != nil || rep.Port == 0 || rep.Binding == 0 {
		t.Fatalf("CM_BIND's reply %+v (%v): want a binding and a port", rep, err)
	}
	again := &proto.CMBindReq{PortSpace: proto.PortSpaceTCP, Port: rep.Port}
	b.expect(proto.OpCMBind, again, proto.StatusAddrNotAvail) // the wildcard is bound
	b.expect(proto.OpCMUnbind, &proto.Handle{H: rep.Binding}, proto.StatusBadHandle)
	b.expect(proto.OpCMBind, &proto.CMBindReq{PortSpace: 9}, proto.StatusInvalid)
	a.c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st, _ := b.request(proto.OpCMBind, again); st == proto.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the port stayed bound after its client went")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
