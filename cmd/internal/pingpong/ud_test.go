package pingpong

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
)

// TestRunUD runs ibv_ud_pingpong's exchange between two NICs: over the
// in-process link and over kernel UDP sockets, with --chk so that a
// payload placed anywhere but after the GRH space fails the run.
func TestRunUD(t *testing.T) {
	for _, c := range []struct {
		name        string
		size, iters int
		events      bool
		udp         bool
	}{
		{name: "pipe 1024", size: 1024, iters: 100},
		{name: "pipe 4096 events", size: 4096, iters: 50, events: true},
		{name: "pipe 1 byte", size: 1, iters: 50},
		{name: "udp 512", size: 512, iters: 50, udp: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{UD: true, Size: c.size, Iters: c.iters, Events: c.events, Check: true, RDMAPort: udpTestPort}
			p := pair{server: cfg, client: cfg}
			if !c.udp {
				p.serverLink, p.clientLnk = transport.NewPipe()
			}
			srv, cli := p.run(t)
			checkPairOf(t, true, srv, cli, c.size, c.iters)
		})
	}
}

// TestRunUDWire checks the frames of a UD run against ud_pingpong's: UD
// SEND Only (opcode 0x64) with a DETH holding Q_Key 0x11111111 and the
// sender's QPN, to the peer's QPN, and nothing acknowledged.
func TestRunUDWire(t *testing.T) {
	var capture bytes.Buffer
	pw, err := pcap.NewWriter(&capture)
	if err != nil {
		t.Fatal(err)
	}
	a, b := transport.NewPipe()
	cfg := Config{UD: true, Size: 64, Iters: 5}
	s := cfg
	s.Pcap = pw
	srv, cli := pair{server: s, client: cfg, serverLink: a, clientLnk: b}.run(t)
	checkPairOf(t, true, srv, cli, 64, 5)
	pw.Flush()
	frames, err := pcap.ReadFrom(&capture)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 10 {
		t.Fatalf("%d frames, want 10 (5 each way, no ACKs)", len(frames))
	}
	toServer := 0
	for i, fr := range frames {
		var f wire.Frame
		if err := f.Decode(fr.Data, 0); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		pkt := &f.Packet
		if pkt.Opcode() != wire.UDSendOnly {
			t.Errorf("frame %d: opcode %#x, want UD SEND Only", i, pkt.Opcode())
		}
		if pkt.DETH().QKey() != UDQKey {
			t.Errorf("frame %d: Q_Key %#x", i, pkt.DETH().QKey())
		}
		// The capture's order of a received frame and the next sent one
		// is the NIC's business; each must go one way or the other.
		c, s := cli.res.Local.QPN, srv.res.Local.QPN
		switch from, to := pkt.DETH().SrcQP(), pkt.BTH().DestQP(); {
		case from == c && to == s:
			toServer++
		case from == s && to == c:
		default:
			t.Errorf("frame %d: QP %#x -> %#x, want between %#x and %#x", i, from, to, c, s)
		}
		if len(pkt.Payload()) != 64 {
			t.Errorf("frame %d: payload %d bytes", i, len(pkt.Payload()))
		}
	}
	if toServer != 5 {
		t.Errorf("%d frames to the server, want 5", toServer)
	}
}

func TestUDConfig(t *testing.T) {
	r, err := Config{UD: true}.resolve(context.Background())
	if err != nil || r.Size != DefaultUDSize {
		t.Fatalf("default UD size: %v %v", r, err)
	}
	// The embedded NIC's link MTU allows 4096; one byte more is refused
	// as ud_pingpong refuses it.
	if _, err := Run(context.Background(), Config{UD: true, Size: 4097}); !errors.Is(err, ErrConfig) {
		t.Errorf("size 4097: %v, want ErrConfig", err)
	}
}

// TestRunUDTAP: the TAP mode with UD, as against ibv_ud_pingpong in the
// lab: the address handle names the peer's GID from its message, and a
// size over the TAP's port MTU (1024 on Ethernet 1500) is refused.
func TestRunUDTAP(t *testing.T) {
	f := newFakeTAPs(t, "tapS", "tapC")
	srvTAP := &tapnic.Config{TAP: "tapS", Prefixes: prefixes("10.77.0.1/24")}
	cliTAP := &tapnic.Config{TAP: "tapC", Prefixes: prefixes("10.77.0.2/24")}
	cfg := Config{UD: true, Size: 1024, Iters: 20, GIDIndex: 1, Check: true} // -g 1, as on rxe
	srv, cli := runTAPPair(t, f, srvTAP, cliTAP, "10.77.0.1", cfg)
	if re := linesREOf(true, "::ffff:10.77.0.1", "::ffff:10.77.0.2", 1024, 20); !re.MatchString(srv.out.String()) {
		t.Errorf("server output does not match %s:\n%s", re, srv.out.String())
	}
	if re := linesREOf(true, "::ffff:10.77.0.2", "::ffff:10.77.0.1", 1024, 20); !re.MatchString(cli.out.String()) {
		t.Errorf("client output does not match %s:\n%s", re, cli.out.String())
	}
	big := Config{UD: true, Size: 1025, TAP: &tapnic.Config{TAP: "tapX", Prefixes: prefixes("10.77.0.3/24")}}
	if _, err := Run(context.Background(), big); !errors.Is(err, ErrConfig) {
		t.Errorf("1025 bytes on a 1500 TAP: %v, want ErrConfig", err)
	}
	jumbo := Config{UD: true, Size: 4096, TAP: &tapnic.Config{TAP: "tapX", MTU: 9000, Prefixes: prefixes("10.77.0.3/24")}}
	if _, err := jumbo.resolve(context.Background()); err != nil {
		t.Errorf("4096 bytes on a 9000 TAP: %v", err)
	}
}
