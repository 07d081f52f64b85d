// Package netstack is a gVisor TCP/IP stack as a stream.Network: the
// iWARP streams of the TAP mode, where the NIC has its own TCP/IP stack on
// the TAP (tap.TCPStack) instead of the host's. Conn wraps a netstack TCP
// endpoint in the event-driven stream.Conn contract and keeps MPA's
// records whole on the wire (stream.RecordWriter).
//
// It is apart from package stream, which holds only the contract, because
// it links some forty gVisor packages: the engine, which imports the
// contract, and programs on kernel TCP or the simulator must not carry
// them.
package netstack
