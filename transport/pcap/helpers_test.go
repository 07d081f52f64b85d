// Frames the tests write and read back: recognisable by an id, and
// different from each other in more than one bit.

package pcap_test

import (
	"encoding/binary"
	"time"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
)

// mkFrame builds an n-byte Ethernet frame (local experimental EtherType
// 0x88b5) carrying id right after the header, so tests can tell frames
// apart in a capture.
func mkFrame(id uint32, n int) []byte {
	if n < 18 {
		n = 18
	}
	f := make([]byte, n)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 0x02})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 0x01})
	binary.BigEndian.PutUint16(f[12:14], 0x88b5)
	binary.BigEndian.PutUint32(f[14:18], id)
	h := id * 0x9e3779b1
	for i := 18; i < n; i++ {
		f[i] = byte(i*7) ^ byte(h>>(8*(i%4)))
	}
	return f
}

// frameID is the id mkFrame put in f.
func frameID(f []byte) uint32 { return binary.BigEndian.Uint32(f[14:18]) }

// arrival is one delivery as a receiver saw it.
type arrival struct {
	at   time.Duration
	data string
}

// recorder installs a receiver on ep that logs arrivals with clk's time.
func recorder(clk clock.Clock, ep transport.Endpoint) *[]arrival {
	var log []arrival
	ep.SetReceiver(func(f []byte) { log = append(log, arrival{clk.Now(), string(f)}) })
	return &log
}
