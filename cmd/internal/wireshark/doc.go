// Package wireshark holds rnic.lua, a Wireshark plugin that adds rnic's
// verdicts to Wireshark's own tree, and the tests that check it with tshark
// on real rxe and siw captures and on altered copies of them.
//
// Wireshark decodes RoCEv2 and iWARP but leaves out checks a reader of
// rnic's captures wants: it never computes the RoCEv2 invariant CRC (IBTA
// Vol 1 Annex A17.3.3: CRC-32 over the packet with the fields routers may
// change masked to ones), and it checks the MPA CRC (RFC 5044 §4.4, CRC-32C)
// only where its dissector saw the connection negotiate one. The plugin
// computes both and exposes them as fields a display filter can use
// (rnic.icrc.bad, rnic.mpa.crc.bad, ...; the list heads rnic.lua).
//
//	tshark -X lua_script:cmd/internal/wireshark/rnic.lua -r capture.pcap -Y rnic.icrc.bad
//
// The same rules are rnic's own in Go (roce/wire.ICRC, iwarp/wire.CRC); the
// plugin restates them in Lua because Wireshark loads Lua, and the tests
// hold the two to the same captures.
package wireshark
