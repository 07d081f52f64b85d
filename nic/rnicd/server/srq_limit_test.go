// SRQ_LIMIT: arming an SRQ's limit, and its refusals. (The event itself,
// SRQ_LIMIT_REACHED once receives drain below the limit, is nic's and is
// tested there; the drop-in library's corner test sees it end to end.)

package server_test

import (
	"testing"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

func TestSRQLimit(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	_, body := r.request(proto.OpAllocPD, &proto.Empty{})
	pd := decode(t, body, &proto.Handle{}).H
	srq := decode(t, r.requestFDs(proto.OpCreateSRQ, &proto.CreateSRQReq{PD: pd, MaxWR: 8, MaxSGE: 1}), &proto.CreateSRQReply{}).SRQ

	r.expect(proto.OpSRQLimit, &proto.SRQLimitReq{SRQ: srq + 100, Limit: 2}, proto.StatusBadHandle)
	r.expect(proto.OpSRQLimit, &proto.SRQLimitReq{SRQ: pd, Limit: 2}, proto.StatusBadHandle) // a PD's handle
	r.expect(proto.OpSRQLimit, &proto.SRQLimitReq{SRQ: srq, Limit: 9}, proto.StatusInvalid)  // above max_wr
	r.expect(proto.OpSRQLimit, &proto.SRQLimitReq{SRQ: srq, Limit: 1 << 31}, proto.StatusInvalid)
	r.expect(proto.OpSRQLimit, &proto.SRQLimitReq{SRQ: srq, Limit: 8}, proto.StatusOK)
	r.expect(proto.OpSRQLimit, &proto.SRQLimitReq{SRQ: srq, Limit: 0}, proto.StatusOK) // disarm
}
