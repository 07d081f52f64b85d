package tap

import (
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/tsharktest"
)

// TestTsharkOracle captures a Host's ARP/ND/ICMP/MLD conversation (and a
// RoCE frame each way) through HostConfig.Pcap and has tshark decode it:
// no malformed frames, no expert warnings, and the fields the host wrote.
func TestTsharkOracle(t *testing.T) {
	tsharktest.Path(t) // skips without tshark
	path := filepath.Join(t.TempDir(), "host.pcap")
	pw, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h, w := newTestHost(t, true, func(c *HostConfig) { c.Pcap = pw })
	for range 4 { // gratuitous ARP, MLDv2 report, two unsolicited NAs
		w.next()
	}
	h.RoCE().SetReceiver(func([]byte) {})

	w.send(arpFrame(t, peerMAC, broadcastMAC, arpRequest, peerMAC, peer4, [6]byte{}, host4))
	w.next()
	sn := solicitedNode(host6)
	w.send(nsFrame(t, multicastMAC(sn), peer6, sn, host6, 255, peerMAC[:]))
	w.next()
	w.send(echoRequest4(t, peerMAC, hostMAC, peer4, host4, 1, 1, []byte("ping")))
	w.next()
	ip := ip6(peer6, host6, layers.IPProtocolICMPv6, 64)
	w.send(serialize(t, eth(peerMAC, hostMAC, layers.EthernetTypeIPv6), ip, icmp6Layer(ip, layers.ICMPv6TypeEchoRequest, 0),
		&layers.ICMPv6Echo{Identifier: 2, SeqNumber: 3}, gopacket.Payload("ping6")))
	w.next()
	w.send(udpFrame4(t, hostMAC, host4, 9999, []byte("nobody")))
	w.next()
	w.send(roceFrame(t, peerMAC, hostMAC, peer4, host4, 0, []byte("in")))
	if err := h.RoCE().Send(roceFrame(t, hostMAC, broadcastMAC, host4, peer4, 0, []byte("out"))); err != nil {
		t.Fatal(err)
	}
	w.next()
	// Resolution of a new IPv6 neighbour: the NS to its solicited-node group.
	h.Lookup(peerLL)
	w.next()
	w.barrier()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}

	tsharktest.Check(t, path, tsharktest.Options{})
	rows := tsharktest.Fields(t, path, tsharktest.Options{}, "arp.opcode", "icmp.type", "icmpv6.type", "icmpv6.nd.na.flag.s", "eth.src")
	var arpOps, icmpTypes, icmpv6Types []uint64
	solicitedNA, unsolicitedNA := 0, 0
	for _, r := range rows {
		if r["eth.src"] != "02:00:00:00:00:01" {
			continue // only what the host sent
		}
		if v, ok := r.Int("arp.opcode"); ok {
			arpOps = append(arpOps, v)
		}
		if v, ok := r.Int("icmp.type"); ok {
			icmpTypes = append(icmpTypes, v)
		}
		if v, ok := r.Int("icmpv6.type"); ok {
			icmpv6Types = append(icmpv6Types, v)
			if v == 136 {
				if s, _ := r.Int("icmpv6.nd.na.flag.s"); s == 1 {
					solicitedNA++
				} else {
					unsolicitedNA++
				}
			}
		}
	}
	if len(arpOps) != 2 || arpOps[0] != 1 || arpOps[1] != 2 {
		t.Errorf("ARP opcodes sent %v, want [1 2] (announcement, reply)", arpOps)
	}
	if len(icmpTypes) != 3 || icmpTypes[0] != 0 || icmpTypes[1] != 3 || icmpTypes[2] != 0 {
		t.Errorf("ICMP types sent %v, want [0 3 0] (echo reply, unreachable, the barrier's echo reply)", icmpTypes)
	}
	want6 := []uint64{143, 136, 136, 136, 129, 135}
	if len(icmpv6Types) != len(want6) {
		t.Fatalf("ICMPv6 types sent %v, want %v", icmpv6Types, want6)
	}
	for i := range want6 {
		if icmpv6Types[i] != want6[i] {
			t.Errorf("ICMPv6 types sent %v, want %v", icmpv6Types, want6)
			break
		}
	}
	if solicitedNA != 1 || unsolicitedNA != 2 {
		t.Errorf("NA: %d solicited, %d unsolicited; want 1, 2", solicitedNA, unsolicitedNA)
	}
}
