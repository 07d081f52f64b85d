// PostRecv's wait for the daemon (recvwait.go): a receive posted is in the
// NIC when PostRecv returns, however long the daemon's drainer slept.

package client_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/verbs"
)

// TestUDReceivePostedOnReturn: when PostRecv returns, the daemon has put
// the receive into its NIC (the ring's RQ done has passed it): a UD
// datagram that finds no receive there is dropped without a trace. Each
// round posts one receive at b after an idle gap (the drainer may have
// gone to sleep: the post rings its doorbell and waits), checks RQ done,
// then at once sends b a datagram from another client, which must arrive.
// The daemon runs in a child process, as it would for real: nothing in
// this process wakes when it answers.
func TestUDReceivePostedOnReturn(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "rnicd.sock")
	daemon := startChild(t, "RNICD_TEST_ROLE=daemon", "RNICD_TEST_SOCKET="+sock)
	daemon.expect(t, "ready")
	defer daemon.in.Close()
	spec := ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic0", Socket: sock}
	openSpec := func() ibv.Device {
		dev, err := ibv.Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dev.Close() })
		return dev
	}
	a, b := newEnd(t, openSpec(), verbs.QPTypeUD, 4096), newEnd(t, openSpec(), verbs.QPTypeUD, 4096)
	const qkey = 0x77
	toRTSUD(t, a, qkey)
	toRTSUD(t, b, qkey)
	ah, err := a.dev.CreateAH(a.pd, b.gid())
	if err != nil {
		t.Fatal(err)
	}
	send := &verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: sge(a, 0, 32),
		AH: ah.AV(), RemoteQPN: b.qp.QPN(), RemoteQKey: qkey}
	rings, _ := client.QPRings(b.qp)
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	for i := range rounds {
		// Idle gaps from none to a few milliseconds: the drainer is
		// awake, going to sleep, or asleep.
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		if err := b.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: sge(b, 0, 40+32)}); err != nil {
			t.Fatal(err)
		}
		if done, prod := rings.RQDone.Load(), rings.RQ.Prod.Load(); int32(done-prod) < 0 {
			t.Fatalf("round %d: PostRecv returned with RQ done %d before the producer %d", i, done, prod)
		}
		send.ID = uint64(i)
		if err := a.qp.PostSend(send); err != nil {
			t.Fatal(err)
		}
		if wc, ok := pollWithin(a.cq, 5*time.Second); !ok || wc.Status != verbs.WCSuccess {
			t.Fatalf("round %d: send completion %+v (arrived: %v)", i, wc, ok)
		}
		wc, ok := pollWithin(b.cq, 5*time.Second)
		if !ok {
			t.Fatalf("round %d: the datagram found no receive in the NIC: PostRecv returned before the daemon took it", i)
		}
		if wc.Status != verbs.WCSuccess || wc.WRID != uint64(i) {
			t.Fatalf("round %d: receive completion %+v", i, wc)
		}
	}
}
