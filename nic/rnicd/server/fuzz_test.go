// A fuzz target of the whole request path: arbitrary messages into a live
// session (header, op table, body decoders, handlers, the NIC behind them)
// must never panic, and the session must still answer a good request.

package server

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func FuzzHandle(f *testing.F) {
	var nicDev *embedded.NIC
	var err error
	for range 20 {
		addr := netip.AddrFrom4([4]byte{127, byte(1 + rand.IntN(254)), byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
		if nicDev, err = embedded.Open(embedded.UDPConfig{Name: "rnic0", Addr: addr}); err == nil {
			break
		}
	}
	if err != nil {
		f.Fatal(err)
	}
	dev := nicDev.Verbs(nic.IBVOptions{})
	defer dev.Close()
	// Small limits: objects pile up across inputs.
	srv, err := New(Config{Devices: []ibv.Device{dev},
		Limits: Limits{MaxQPs: 4, MaxMRs: 4, MaxMRBytes: 1 << 20, MaxRingBytes: 4 << 20, MaxObjects: 32}})
	if err != nil {
		f.Fatal(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		f.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		file := os.NewFile(uintptr(fd), "seqpacket")
		defer file.Close()
		c, err := net.FileConn(file)
		if err != nil {
			f.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	ours, theirs := conn(fds[0]), conn(fds[1])
	defer theirs.Close()
	replies := make(chan []byte, 1)
	go func() {
		// The client side: keep replies flowing, remember the last.
		buf := make([]byte, proto.MaxMessage)
		for {
			n, err := theirs.Read(buf)
			if err != nil {
				return
			}
			select {
			case <-replies:
			default:
			}
			replies <- append([]byte(nil), buf[:n]...)
		}
	}()
	s := newSession(srv, srv.host, ours)
	defer s.reap()
	go s.writeEvents()
	req := func(op proto.Op, m proto.Message) []byte {
		return proto.AppendMessage(nil, proto.Header{Op: op, Kind: proto.KindRequest, Seq: 1}, m)
	}
	s.handle(req(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}), nil)
	s.handle(req(proto.OpAllocPD, &proto.Empty{}), nil)
	s.handle(req(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8}), nil)
	// A completion channel with a CQ on it: seeds below put
	// more CQs on it and try to destroy it.
	s.handle(req(proto.OpCreateChannel, &proto.Empty{}), nil)
	var channel uint32
	for h, o := range s.objs {
		if o.kind() == kindChannel {
			channel = h
		}
	}
	if channel == 0 {
		f.Fatal("CREATE_CHANNEL made no channel")
	}
	s.handle(req(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8, Channel: channel}), nil)

	for _, op := range proto.Ops() {
		b, _ := proto.BodiesOf(op)
		if b.Request != nil {
			f.Add(req(op, b.Request()))
		}
	}
	f.Add(req(proto.OpCreateQP, &proto.CreateQPReq{PD: 1, SendCQ: 2, RecvCQ: 2, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}))
	f.Add(req(proto.OpModifyQP, &proto.ModifyQPReq{QP: 3, Mask: verbs.AttrState | verbs.AttrPort | verbs.AttrPKeyIndex | verbs.AttrAccessFlags,
		Attr: verbs.QPAttr{State: verbs.QPSInit, PortNum: 1}}))
	// The ring arena: a slot freed and taken again, an own chunk, a
	// chunk's memfd asked for again.
	f.Add(req(proto.OpDestroyQP, &proto.Handle{H: 3}))
	f.Add(req(proto.OpCreateQP, &proto.CreateQPReq{PD: 1, SendCQ: 2, RecvCQ: 2, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 1 << 14, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}))
	f.Add(req(proto.OpCreateSRQ, &proto.CreateSRQReq{PD: 1, MaxWR: 16, MaxSGE: 2}))
	f.Add(req(proto.OpRingChunk, &proto.Handle{H: 1}))
	// Completion channels: CQs on the channel and on none, the busy
	// channel's destroy, a channel made and destroyed.
	f.Add(req(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8, Channel: channel}))
	f.Add(req(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 1 << 12}))
	f.Add(req(proto.OpDestroyChannel, &proto.Handle{H: channel}))
	f.Add(req(proto.OpDestroyCQ, &proto.Handle{H: channel + 1}))
	f.Add(req(proto.OpCreateChannel, &proto.Empty{}))
	const probe = 0xfeed
	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) >= 8 && le32(msg[4:]) == probe {
			return // its reply would pass for the probe's
		}
		s.handle(msg, nil)
		// Still serving: a query is answered.
		s.handle(proto.AppendMessage(nil, proto.Header{Op: proto.OpQueryPort, Kind: proto.KindRequest, Seq: probe},
			&proto.QueryPortReq{Port: 1}), nil)
		for {
			h, _, err := proto.DecodeMessage(<-replies, 0)
			if err == nil && h.Seq == probe {
				if h.Status != proto.StatusOK {
					t.Fatalf("QUERY_PORT after %x: status %d", msg, h.Status)
				}
				return
			}
		}
	})
}
