// Package layers registers the RoCEv2 transport headers (IBTA Vol 1 ch. 9,
// carried in UDP port 4791 per Annex A17) as gopacket layers, so that
//
//	gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
//
// on a RoCEv2 frame yields Ethernet, [Dot1Q,] IPv4/IPv6, UDP, BTH, then one
// layer per extension header in the order the opcode prescribes, then a
// gopacket.Payload. Importing the package hooks UDP port 4791 to the BTH.
// The package is named after gopacket's own layers package; import it under
// another name (e.g. rlayers) next to it.
//
// The header formats, diagrams and the opcode table live in roce/wire; this
// package is an adapter and decodes through wire's views, so both agree by
// construction.
//
// # Layer type numbers
//
// gopacket reserves 1000-1999 for application layers (array lookup, fast);
// gopacket itself uses 1010. rnic's RoCEv2 layers take 1791-1800 (after the
// port number, 4791); other rnic adapters (iWARP) should pick another block.
//
// # Pad and ICRC
//
// The pad and the 4-byte ICRC trail the payload, but gopacket layers nest
// front to back, each one's payload being the next one's input. The BTH
// therefore keeps them: BTH.PadCnt says how many pad bytes there are and
// BTH.ICRC holds the ICRC as carried on the wire (read little-endian, as
// roce/wire does); the BTH's LayerPayload stops before the pad. The ICRC is a
// field, not a layer.
//
// The ICRC covers the IP and UDP headers, which the BTH decoder never sees,
// so verifying it needs the packet's network layer: VerifyICRC(packet) for a
// gopacket.Packet, or BTH.VerifyICRC(ipHeader, udpHeader) on the
// DecodingLayerParser path. For the same reason BTH.SerializeTo cannot
// compute it (gopacket serializes innermost first, before UDP and IP exist):
// it writes BTH.ICRC as a placeholder, and SealICRC fills the real value into
// the finished frame.
//
// # Which layer follows an extension header
//
// An extension header cannot tell from its own bytes what follows it (RETH
// is followed by ImmDt in WRITE Only with Immediate, by the payload in WRITE
// Only, by nothing in READ Request); the BTH opcode decides. On the
// gopacket.NewPacket path the BTH's decoder threads the opcode through the
// chain. On the DecodingLayerParser path use a DecodingLayers bundle, whose
// extension headers are linked to its BTH.
package layers
