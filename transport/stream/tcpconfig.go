// The configuration of the TCP-backed Networks: kerneltcp and netstack
// give their connections the same send queue, read buffer, linger and dial
// timeout, so one type configures both.

package stream

import "time"

// Defaults for TCPConfig fields left zero.
const (
	DefaultReadBuffer  = 64 << 10
	DefaultLinger      = 30 * time.Second
	DefaultDialTimeout = 10 * time.Second
)

// TCPConfig configures the connections of a TCP-backed Network (kernel
// TCP, netstack). The zero value uses the defaults.
type TCPConfig struct {
	// SendBuffer bounds the bytes Write queues (see "Backpressure" in the
	// package comment); 0 means DefaultSendBuffer.
	SendBuffer int
	// ReadBuffer is the size of each connection's reused read buffer, the
	// largest chunk onData gets; 0 means DefaultReadBuffer.
	ReadBuffer int
	// Linger bounds how long a closed connection waits for its queued
	// bytes to leave and for the peer's FIN; when it runs out the
	// connection is reset and onClose gets ErrTimeout. 0 means
	// DefaultLinger, a negative value waits forever.
	Linger time.Duration
	// DialTimeout bounds Dial; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
}

// WithDefaults returns c with every field left zero set to its default.
func (c TCPConfig) WithDefaults() TCPConfig {
	if c.SendBuffer <= 0 {
		c.SendBuffer = DefaultSendBuffer
	}
	if c.ReadBuffer <= 0 {
		c.ReadBuffer = DefaultReadBuffer
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	return c
}
