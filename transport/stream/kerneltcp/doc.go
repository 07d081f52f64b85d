// Package kerneltcp is the host's TCP as a stream.Network: the iWARP
// streams of the embedded mode, on kernel sockets. Network dials and
// listens; Conn wraps a net.TCPConn in the event-driven stream.Conn
// contract (a reader and a writer goroutine, a bounded send queue that
// refuses instead of blocking).
//
// It is apart from package stream, which holds only the contract, so that
// the engine links no implementation, and apart from netstack and
// simstream so that a program using kernel sockets links neither gVisor
// nor the simulator.
package kerneltcp
