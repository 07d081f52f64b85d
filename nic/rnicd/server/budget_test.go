// Budgets per uid and for the whole daemon: clients of one user together
// cannot map more than their uid's budget, whatever each client's own
// limit, and what a client mapped comes back when it leaves.

package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
)

func TestMappedBytesPerUID(t *testing.T) {
	const file = 1 << 30 // sparse: nothing is touched
	d := rnicdtest.Start(t, rnicdtest.Options{Limits: server.Limits{
		MaxMRBytes:           4 * file, // each client alone may map 4 of them
		MaxMappedBytesPerUID: 6*file + 64<<20,
	}})
	fd := arena(t, file, true)
	access := uint32(memory.LocalWrite)
	regMR := func(r *raw, pd uint32, i int) (proto.Status, string) {
		st, body := r.request(proto.OpRegMR, &proto.RegMRReq{PD: pd, Access: access, FileSize: file, Length: 4096, IOVA: uint64(i+1) << 32}, fd)
		return st, string(body)
	}
	client := func() (*raw, uint32) {
		r := dial(t, d.Socket)
		r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
		_, body := r.request(proto.OpAllocPD, &proto.Empty{})
		return r, decode(t, body, &proto.Handle{}).H
	}
	a, pdA := client()
	b, pdB := client()
	for i := range 4 {
		if st, msg := regMR(a, pdA, i); st != proto.StatusOK {
			t.Fatalf("client A, MR %d: %v %s", i, st, msg)
		}
	}
	for i := range 2 {
		if st, msg := regMR(b, pdB, i); st != proto.StatusOK {
			t.Fatalf("client B, MR %d: %v %s", i, st, msg)
		}
	}
	// B is within its own limit, but its uid is not.
	st, msg := regMR(b, pdB, 2)
	if st != proto.StatusLimit || !strings.Contains(msg, "--max-mapped-bytes-per-uid") {
		t.Fatalf("B's third MR: %v %q, want the uid's budget named", st, msg)
	}
	// A leaves; its mappings come back to the uid once it is reaped.
	reaped := d.Server.Stats().ClientsReaped
	a.c.Close()
	for deadline := time.Now().Add(10 * time.Second); d.Server.Stats().ClientsReaped == reaped; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("client A not reaped in 10 s")
		}
	}
	if st, msg := regMR(b, pdB, 3); st != proto.StatusOK {
		t.Fatalf("after A left, B's MR: %v %s", st, msg)
	}
}
