package rping

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rdmacm"
	"github.com/rnic/rnic/roce/cm"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/pcap"
)

// The RoCE tests' NICs: embedded-mode NICs on loopback addresses of their
// own (kernel UDP sockets on port 4791 of each address; no root).
var (
	roceServerAddr = netip.MustParseAddr("127.0.9.1")
	roceClientAddr = netip.MustParseAddr("127.0.9.2")
)

// rocePair runs a server on an embedded NIC at 127.0.9.1 (rdma_cm port
// chosen by the listener) and, through Run, a client whose NIC Run opens at
// 127.0.9.2 (or, for a device cli.Device names, the device Run opens).
func rocePair(t *testing.T, srv, cli Config) (*side, *side, *CM) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, c := &side{res: make(chan error, 1)}, &side{res: make(chan error, 1)}
	n, err := openKernelNIC(roceServerAddr, nil, &Config{})
	if err != nil {
		t.Fatal(err)
	}
	cn, err := NewRoCE(n, rdmacm.Config{})
	if err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { cn.Close(); n.Close() })
	ready := make(chan netip.AddrPort, 1)
	srv.Server, srv.Addr = true, roceServerAddr
	srv.Out, srv.Err, srv.Ready = &s.out, &s.err, func(a netip.AddrPort) { ready <- a }
	go func() { s.res <- runWith(ctx, srv, cn, 0) }()
	var addr netip.AddrPort
	select {
	case addr = <-ready:
	case err := <-s.res:
		t.Fatalf("server: %v", err)
	}
	cli.Addr, cli.Port = addr.Addr(), addr.Port()
	if cli.Device.Backend == ibv.BackendLocal {
		cli.Source = roceClientAddr
	}
	cli.Out, cli.Err = &c.out, &c.err
	go func() { c.res <- Run(ctx, cli) }()
	return s, c, cn
}

// TestPingRoCEEmbedded: rping over RoCEv2 between two embedded NICs, the
// sizes and counts of the iWARP test: every ping comes back intact (-V),
// both sides print what rping prints, the client's DREQ ends the server
// well, and the CM MADs are those of rping on rxe (REQ, REP, RTU, DREQ,
// DREP, nothing rejected).
func TestPingRoCEEmbedded(t *testing.T) {
	for _, c := range []struct{ size, count int }{
		{DefaultSize, 10}, {MinSize, 3}, {1000, 5}, {4096, 4}, {MaxSize, 2}, {64, 1},
	} {
		t.Run(fmt.Sprintf("size%d_count%d", c.size, c.count), func(t *testing.T) {
			s, cl, cn := rocePair(t, Config{Verbose: true, Size: c.size}, Config{Verbose: true, Validate: true, Size: c.size, Count: c.count})
			if err := wait(t, "client", cl.res); err != nil {
				t.Fatalf("client: %v\nstderr: %s", err, cl.err.String())
			}
			if err := wait(t, "server", s.res); err != nil {
				t.Fatalf("server: %v\nstderr: %s", err, s.err.String())
			}
			var want, wantSrv strings.Builder
			buf := make([]byte, c.size)
			for n := range c.count {
				FillPing(buf, n)
				fmt.Fprintf(&want, "ping data: %s\n", cString(buf))
				fmt.Fprintf(&wantSrv, "server ping data: %s\n", cString(buf))
			}
			if got := cl.out.String(); got != want.String() {
				t.Errorf("client stdout:\n%.300s\nwant\n%.300s", got, want.String())
			}
			if got := s.out.String(); got != wantSrv.String() {
				t.Errorf("server stdout:\n%.300s\nwant\n%.300s", got, wantSrv.String())
			}
			if got, want := s.err.String(), "server DISCONNECT EVENT...\nwait for RDMA_READ_ADV state 10\n"; got != want {
				t.Errorf("server stderr %q, want %q", got, want)
			}
			if got, want := withoutWaitNotice(cl.err.String()), "client DISCONNECT EVENT...\n"; got != want {
				t.Errorf("client stderr %q, want %q", got, want)
			}
			ctr := cn.CM().Manager().Counters()
			if ctr.Retransmits != 0 {
				t.Errorf("server CM counters %+v: retransmissions on loopback", ctr)
			}
		})
	}
}

// TestPingRoCEWire records the client's frames and checks the sequence of
// rping over rxe (testdata/captures/rxe-rping.pcap): REQ, REP, RTU on QP1,
// then per ping SEND, READ request, READ response, SEND, SEND, WRITE, SEND
// (each ACKed), and DREQ/DREP at the end.
func TestPingRoCEWire(t *testing.T) {
	var capture bytes.Buffer
	pw, err := pcap.NewWriter(&capture)
	if err != nil {
		t.Fatal(err)
	}
	const count = 3
	s, cl, _ := rocePair(t, Config{}, Config{Validate: true, Count: count, Pcap: pw})
	if err := wait(t, "client", cl.res); err != nil {
		t.Fatalf("client: %v\nstderr: %s", err, cl.err.String())
	}
	if err := wait(t, "server", s.res); err != nil {
		t.Fatalf("server: %v", err)
	}
	if err := pw.Flush(); err != nil {
		t.Fatal(err)
	}
	var seq []string
	for i, f := range readPcapFrames(t, capture.Bytes()) {
		seq = append(seq, frameKind(f))
		// What the kernel socket sent: IPv4 ID 0 (the MADs' too) and a
		// correct ICRC.
		var wf wire.Frame
		if err := wf.Decode(f, 0); err != nil || !wf.VerifyICRC() || wf.IP()[4] != 0 || wf.IP()[5] != 0 {
			t.Errorf("frame %d (%s): decode %v, ICRC ok %v, IP ID %#x", i+1, seq[i], err, err == nil && wf.VerifyICRC(), f[18:20])
		}
	}
	// Each direction in order (the capture's interleaving of the two is
	// the order of recording, not of the wire).
	wantTx := []string{"tx MAD 0x0010", "tx MAD 0x0014"}
	wantRx := []string{"rx MAD 0x0013"}
	for range count {
		wantTx = append(wantTx,
			"tx 4",  // read advert
			"tx 16", // READ response
			"tx 17", // ACK of the go ahead
			"tx 4",  // write advert
			"tx 17", // ACK of the WRITE
			"tx 17") // ACK of the go ahead
		wantRx = append(wantRx, "rx 17", "rx 12", "rx 4", "rx 17", "rx 10", "rx 4")
	}
	wantTx = append(wantTx, "tx MAD 0x0015")
	wantRx = append(wantRx, "rx MAD 0x0016")
	var tx, rx []string
	for _, k := range seq {
		if strings.HasPrefix(k, "tx") {
			tx = append(tx, k)
		} else {
			rx = append(rx, k)
		}
	}
	// A responder's ACK (17) and the same side's own next request are
	// independent: the server may send its READ Request before the ACK of
	// the SEND that prompted it (seen under load). So the requests and
	// responses are compared in order, and the ACKs by count.
	if !sameModuloACKs(tx, wantTx) || !sameModuloACKs(rx, wantRx) {
		t.Fatalf("client's frames:\n%v\nwant sent\n%v\nand received\n%v\n(ACKs may move)", seq, wantTx, wantRx)
	}
}

// sameModuloACKs reports whether got and want hold the same frames in the
// same order once ACKs (opcode 17) are set aside, and as many ACKs.
func sameModuloACKs(got, want []string) bool {
	split := func(s []string) (rest []string, acks int) {
		for _, k := range s {
			if strings.HasSuffix(k, " 17") {
				acks++
			} else {
				rest = append(rest, k)
			}
		}
		return rest, acks
	}
	g, ga := split(got)
	w, wa := split(want)
	return ga == wa && strings.Join(g, ",") == strings.Join(w, ",")
}

// frameKind names a RoCEv2 frame (IPv4, no VLAN) by direction (the
// client's address as source: tx) and BTH opcode, or CM attribute for
// QP1's MADs.
func frameKind(f []byte) string {
	const ip, bth = 14, 14 + 20 + 8
	if len(f) < bth+12 {
		return "short"
	}
	dir := "rx"
	if netip.AddrFrom4([4]byte(f[ip+12:ip+16])) == roceClientAddr {
		dir = "tx"
	}
	op := f[bth]
	dqp := uint32(f[bth+5])<<16 | uint32(f[bth+6])<<8 | uint32(f[bth+7])
	if dqp == 1 {
		mad := bth + 12 + 8 // BTH, DETH
		if len(f) < mad+cm.MADLen {
			return dir + " short MAD"
		}
		return fmt.Sprintf("%s MAD %#04x", dir, uint16(f[mad+16])<<8|uint16(f[mad+17]))
	}
	return fmt.Sprintf("%s %d", dir, op)
}

// TestRoCERejected: a client whose server listens on another port gets a
// REJ (invalid service ID, as Linux's CM answers), which Run reports as a
// ConnectError.
func TestRoCERejected(t *testing.T) {
	n, err := openKernelNIC(roceServerAddr, nil, &Config{})
	if err != nil {
		t.Fatal(err)
	}
	cn, err := NewRoCE(n, rdmacm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cn.Close(); n.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = Run(ctx, Config{Addr: roceServerAddr, Port: 1, Source: roceClientAddr, Count: 1})
	var ce *ConnectError
	var rej *rdmacm.RejectError
	if !errors.As(err, &ce) || !errors.As(err, &rej) || rej.Reason != cm.RejInvalidServiceID {
		t.Fatalf("Run = %v, want a ConnectError with REJ invalid service ID", err)
	}
}

// TestRoCEListenOtherAddr: a server may only listen on its NIC's address.
func TestRoCEListenOtherAddr(t *testing.T) {
	n, err := openKernelNIC(roceServerAddr, nil, &Config{})
	if err != nil {
		t.Fatal(err)
	}
	cn, err := NewRoCE(n, rdmacm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cn.Close(); n.Close() }()
	if _, err := cn.Listen(netip.AddrPortFrom(roceClientAddr, DefaultPort)); err == nil {
		t.Fatal("Listen on an address the NIC does not own succeeded")
	}
	l, err := cn.Listen(netip.AddrPortFrom(netip.IPv4Unspecified(), 0))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if p := l.Addr().Port(); p < 0x8000 {
		t.Fatalf("port 0 gave %d, want an ephemeral port", p)
	}
}

// readPcapFrames returns the frames of a capture.
func readPcapFrames(t *testing.T, b []byte) [][]byte {
	t.Helper()
	r, err := pcapgo.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for {
		data, _, err := r.ReadPacketData()
		if err == io.EOF {
			return frames
		}
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, data)
	}
}
