package agent

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
)

// TestMcast: device_info says the device has multicast; attach_mcast and
// detach_mcast reach the device with the verbs rules (UD only, a
// multicast GID, detach only what is attached), and reset leaves no
// attachment behind.
func TestMcast(t *testing.T) {
	dev := pipeDevice(t)
	s := startAgent(t, Config{Device: dev})
	cl, err := agentproto.Dial(context.Background(), s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if info, err := cl.DeviceInfo(); err != nil || !info.Multicast {
		t.Fatalf("device_info: multicast %v (%v), want true", info.Multicast, err)
	}
	pd, _ := cl.CreatePD()
	cq, _ := cl.CreateCQ(16)
	qp := func(typ verbs.QPType) uint32 {
		q, err := cl.CreateQP(agentproto.CreateQP{PD: pd, Type: uint8(typ), SendCQ: cq, RecvCQ: cq,
			Cap: agentproto.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return q.H
	}
	ud, rc := qp(verbs.QPTypeUD), qp(verbs.QPTypeRC)
	groups := nic.DeviceOf(dev).McastGroups
	group := netip.MustParseAddr("239.1.2.3")
	if err := cl.AttachMcast(agentproto.Mcast{QP: ud, GID: group.String()}); err != nil {
		t.Fatalf("attach a UD QP: %v", err)
	}
	if n := groups()[verbs.GIDFromAddr(group)]; n != 1 {
		t.Fatalf("the device has %d QPs in %v after the attach, want 1", n, group)
	}
	wantCode := func(what, code string, err error) {
		t.Helper()
		var pe *agentproto.Error
		if !errors.As(err, &pe) || pe.Code != code {
			t.Fatalf("%s: %v, want a %s error", what, err, code)
		}
	}
	wantCode("attach an RC QP", agentproto.CodeVerbs, cl.AttachMcast(agentproto.Mcast{QP: rc, GID: group.String()}))
	wantCode("attach to a unicast GID", agentproto.CodeVerbs, cl.AttachMcast(agentproto.Mcast{QP: ud, GID: "10.0.0.1"}))
	wantCode("attach to no GID", agentproto.CodeBadRequest, cl.AttachMcast(agentproto.Mcast{QP: ud, GID: "group"}))
	wantCode("attach no QP", agentproto.CodeNoObject, cl.AttachMcast(agentproto.Mcast{QP: 999, GID: group.String()}))
	if err := cl.DetachMcast(agentproto.Mcast{QP: ud, GID: group.String()}); err != nil {
		t.Fatalf("detach: %v", err)
	}
	wantCode("detach again", agentproto.CodeVerbs, cl.DetachMcast(agentproto.Mcast{QP: ud, GID: group.String()}))
	if err := cl.AttachMcast(agentproto.Mcast{QP: ud, GID: "ff0e::1"}); err != nil {
		t.Fatalf("attach to an IPv6 group: %v", err)
	}
	if err := cl.Reset(); err != nil {
		t.Fatal(err)
	}
	if g := groups(); len(g) != 0 {
		t.Fatalf("groups after reset: %v, want none", g)
	}
}
