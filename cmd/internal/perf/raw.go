// The raw UDP figure measured in the same run: what plain kernel UDP
// sockets achieve between the same two addresses with datagrams the size
// of the test's RoCEv2 packets, so that rnic's figures read as a ratio of
// what the host's loopback (or network) allows.
//
//   - bw: the client blasts as many datagrams as rnic sent packets, one
//     sendto per datagram, and the server counts what arrives; the rate is
//     the message bytes those datagrams stand for over the time from the
//     first arrival to the last.
//   - lat: a UDP ping-pong of as many round trips as rnic made, each
//     sample divided by the same round-trip factor as rnic's.

package perf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// RawStats is the raw UDP measurement.
type RawStats struct {
	// Datagram is the UDP payload size, Payload the message bytes one
	// datagram stands for.
	Datagram int `json:"datagram_bytes"`
	Payload  int `json:"payload_bytes"`
	// bw: datagrams sent and received, and the received rate.
	Sent     int     `json:"sent,omitempty"`
	Received int     `json:"received,omitempty"`
	MBps     float64 `json:"mbps,omitempty"`
	Seconds  float64 `json:"seconds,omitempty"`
	// lat: the ping-pong's figures.
	Lat *LatStats `json:"lat,omitempty"`
	// Ratio is rnic's figure over raw UDP's: BW average over MBps, or
	// t_typical over Lat.Typical.
	Ratio float64 `json:"ratio"`
}

// RoCEv2 header sizes a packet of the test carries around its payload.
const (
	bthLen       = 12
	icrcLen      = 4
	rethLen      = 16
	aethLen      = 4
	atomicETHLen = 28
)

// rawDatagram returns the UDP payload size of one RoCEv2 packet of the
// test (a full one for multi-packet messages) and the message bytes it
// carries: a WRITE packet with its RETH, a READ response with its AETH, a
// SEND, or an atomic request, which carries its operands in the AtomicETH
// and stands for the 8 bytes it changes.
func (c *Config) rawDatagram() (datagram, payload int) {
	p := min(c.Size, c.MTU)
	switch c.Op {
	case OpWrite:
		return bthLen + rethLen + p + icrcLen, p
	case OpRead:
		return bthLen + aethLen + p + icrcLen, p
	case OpAtomic:
		return bthLen + atomicETHLen + icrcLen, atomicSize
	}
	return bthLen + p + icrcLen, p
}

// rawReadBuffer is the receive buffer asked for: a burst of datagrams
// should queue, not drop, while the receiver catches up.
const rawReadBuffer = 8 << 20

// rawIdle is how long a sink waits for stragglers once the sender is done.
const rawIdle = 100 * time.Millisecond

func listenRaw(addr netip.Addr) (*net.UDPConn, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		return nil, fmt.Errorf("perf: raw UDP: %w", err)
	}
	c.SetReadBuffer(rawReadBuffer)
	return c, nil
}

// rawSink counts the datagrams arriving on its socket.
type rawSink struct {
	conn        *net.UDPConn
	base        time.Time
	n           atomic.Int64
	first, last atomic.Int64 // ns from base
	done        chan struct{}
}

func startSink(conn *net.UDPConn) *rawSink {
	k := &rawSink{conn: conn, base: time.Now(), done: make(chan struct{})}
	go func() {
		defer close(k.done)
		buf := make([]byte, 1<<16)
		for {
			if _, _, err := conn.ReadFromUDPAddrPort(buf); err != nil {
				return // closed by stop
			}
			now := int64(time.Since(k.base))
			if k.n.Add(1) == 1 {
				k.first.Store(now)
			}
			k.last.Store(now)
		}
	}()
	return k
}

// stop waits until want datagrams have arrived or none came for rawIdle,
// then closes the socket and returns the count and the time from the
// first arrival to the last.
func (k *rawSink) stop(want int) (int, time.Duration) {
	quiet := time.Now()
	seen := k.n.Load()
	for k.n.Load() < int64(want) {
		if n := k.n.Load(); n != seen {
			seen, quiet = n, time.Now()
		} else if time.Since(quiet) > rawIdle {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	k.conn.Close()
	<-k.done
	return int(k.n.Load()), time.Duration(k.last.Load() - k.first.Load())
}

// startEcho sends every datagram back to its sender until conn is closed.
func startEcho(conn *net.UDPConn) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<16)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			conn.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	return done
}

// rawBlast sends count datagrams of size bytes from local to to, one
// sendto each.
func rawBlast(ctx context.Context, local netip.Addr, to netip.AddrPort, size, count int) (int, error) {
	conn, err := listenRaw(local)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	buf := make([]byte, size)
	for i := 0; i < count; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return i, ctx.Err()
		}
		if _, err := conn.WriteToUDPAddrPort(buf, to); err != nil {
			return i, fmt.Errorf("perf: raw UDP send: %w", err)
		}
	}
	return count, nil
}

// errRawLost is returned when a ping got no answer.
var errRawLost = errors.New("perf: raw UDP ping lost")

// rawPing makes count round trips of size-byte datagrams from local to an
// echo at to and returns each round trip's time in ns.
func rawPing(ctx context.Context, local netip.Addr, to netip.AddrPort, size, count int) ([]int64, error) {
	conn, err := listenRaw(local)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	out := make([]byte, size)
	in := make([]byte, 1<<16)
	samples := make([]int64, count)
	for i := range samples {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		t0 := time.Now()
		if _, err := conn.WriteToUDPAddrPort(out, to); err != nil {
			return nil, fmt.Errorf("perf: raw UDP send: %w", err)
		}
		conn.SetReadDeadline(t0.Add(time.Second))
		if _, _, err := conn.ReadFromUDPAddrPort(in); err != nil {
			return nil, fmt.Errorf("%w: round trip %d: %v", errRawLost, i, err)
		}
		samples[i] = int64(time.Since(t0))
	}
	return samples, nil
}
