package scenario

import "time"

// iwarpBasics is rc-basics over iWARP (rnic lab run rc-basics --iwarp).
var iwarpBasics = &Scenario{
	Name: "rc-basics", Title: "iWARP: SEND, WRITE and READ as DDP segments and RDMAP messages",
	Spec: "RFC 5040 §4 (RDMAP messages), §5 (data transfer); RFC 5041 §5 (tagged and untagged DDP segments)",
	Look: "the same work as rc-basics over iWARP (the frames are in the capture: --pcap, rnic decode, or " +
		"--ladder): the 3000-byte SEND goes as untagged DDP segments of queue 0 " +
		"with one MSN and growing message offsets, the last with the L flag; the WRITE as tagged segments naming " +
		"rnic1's STag and tagged offset; the READ as one Read Request (queue 1) that rnic1 answers with a Read " +
		"Response (in two FPDUs), tagged to rnic0's sink STag. No PSNs and no ACKs: TCP below carries them in order, and a WRITE " +
		"completes as soon as the stream has taken it.",
	iwarp: true,
	steps: func(s *stage, a, b *end) error {
		return each(
			func() error { return b.recv(1, dstOff, 4096) },
			func() error { return a.post(send(1, a, 3000)) },
			func() error { a.await(1); b.await(1); return nil },
			func() error { return a.post(write(2, a, b, 2048)) },
			func() error { a.await(1); return nil },
			func() error { return oneOp(a, b, read(3, a, b, 2000)) })
	},
}

// The iWARP scenarios: two iWARP NICs on a simulated TCP network.
var iwarpScenarios = []*Scenario{
	{
		Name: "mpa", Title: "iWARP: MPA negotiation with CRCs and markers, then the RTR",
		Spec: "RFC 5044 §7.1 (MPA Request and Reply), §4.3 (markers), §4.4 (CRC); RFC 6581 §3 (enhanced MPA: IRD/ORD and the RTR)",
		Look: "rnic0 opens a TCP connection and sends an MPA Request asking for CRCs (flag C) and markers (flag M), " +
			"revision 2 with its IRD and ORD and the Ready-to-Receive (RTR) messages it can send in the private " +
			"data; rnic1's MPA Reply asks for both too and picks the RTR; rnic0 then sends that RTR, a zero-length " +
			"RDMA WRITE, before anything else. From then on every FPDU ends in a CRC-32C, and every 512 octets of " +
			"each direction's stream (counted from the first octet after its MPA frame) carry a marker pointing " +
			"back to the start of the FPDU it lies in: the first sits in front of the RTR. A message longer than " +
			"a segment is cut into several FPDUs (DDP segments: the message offset moves on, the last has the L " +
			"flag). In Wireshark, rnic.lua checks each CRC, markers included: rnic.mpa.crc.status.",
		iwarp: true,
		steps: func(s *stage, a, b *end) error {
			return each(
				func() error { return b.recv(1, dstOff, 4096) },
				func() error { return a.post(send(1, a, 1500)) },
				func() error { a.await(1); b.await(1); return nil },
				func() error { return oneOp(a, b, write(2, a, b, 3000)) })
		},
	},
	{
		Name: "terminate", Title: "iWARP: an RDMA WRITE to a bad STag and the Terminate message",
		Spec: "RFC 5040 §7.3.2, §8 (Terminate: tagged buffer error, invalid STag), RFC 5041 §7.2 (DDP tagged checks)",
		Look: "rnic0 WRITEs with an STag rnic1 never gave out; the WRITE completes at once (an iWARP WRITE " +
			"completes when the stream has taken it), but rnic1's DDP layer finds no such tagged buffer and " +
			"answers with a Terminate message (layer DDP, tagged buffer error, invalid STag) that copies the " +
			"offending header, then closes the stream; both QPs go to the error state, and a WR posted after " +
			"that is flushed (WR_FLUSH_ERR) without being sent.",
		iwarp: true,
		steps: func(s *stage, a, b *end) error {
			bad := write(1, a, b, 100)
			bad.RKey ^= 0x5500
			return each(
				func() error { return a.post(bad) },
				func() error { a.await(1); s.wait(time.Millisecond); a.state(); b.state(); return nil },
				func() error { return a.post(write(2, a, b, 100)) },
				func() error { a.await(1); return nil })
		},
	},
}
