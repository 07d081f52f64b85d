package main

// Raw Ethernet frames from one TAP's fd to another's through the bridge:
// the per-frame cost a TAP-mode NIC pays before any protocol work (a
// write syscall, the bridge, the peer TAP's queue, a read syscall).

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/tap"
)

// etherType is IEEE 802's local experimental EtherType: no stack in the
// namespace takes these frames for its own.
// The learning frames carry the next one, so that none left in a queue is
// taken for a test frame.
const (
	etherType      = 0x88b5
	learnEtherType = 0x88b6
)

var (
	macA = [6]byte{0x02, 0x72, 0x61, 0x77, 0x00, 0x01}
	macB = [6]byte{0x02, 0x72, 0x61, 0x77, 0x00, 0x02}
)

// quiet ends a bw run when no frame has arrived for this long (frames the
// receiving TAP's queue dropped never come).
const quiet = 300 * time.Millisecond

// learnWait bounds the learning exchange (a variable for the tests).
var learnWait = 5 * time.Second

func runFrames(netns, bridge, a, b string, size, count int, lat bool) (result, error) {
	if size < 60 || size > 9014 {
		return result{}, fmt.Errorf("frame size %d: want 60..9014", size)
	}
	mtu := max(size-14, 576)
	da, err := tap.OpenDevice(tap.DeviceConfig{Name: a, Netns: netns, Bridge: bridge, MTU: mtu})
	if err != nil {
		return result{}, err
	}
	defer da.Close()
	db, err := tap.OpenDevice(tap.DeviceConfig{Name: b, Netns: netns, Bridge: bridge, MTU: mtu})
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	if err := learn(da, db); err != nil {
		return result{}, err
	}
	if lat {
		return framePingPong(da, db, size, count)
	}
	return frameBlast(da, db, size, count)
}

// frame is a size-byte Ethernet frame from src to dst.
func frame(src, dst [6]byte, size int) []byte {
	return typedFrame(src, dst, size, etherType)
}

func typedFrame(src, dst [6]byte, size int, typ uint16) []byte {
	f := make([]byte, size)
	copy(f[0:6], dst[:])
	copy(f[6:12], src[:])
	binary.BigEndian.PutUint16(f[12:14], typ)
	return f
}

// learn has each side send a frame until the other sees one, so the
// bridge knows both MACs (a fresh port forwards only after its forwarding
// delay; a bridge without STP forwards at once) and the test frames are
// switched, not flooded.
func learn(da, db *tap.Device) error {
	got := make(chan error, 1)
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := db.ReadFrame(buf)
			if err != nil {
				got <- err
				return
			}
			if n >= 14 && [6]byte(buf[6:12]) == macA {
				got <- nil
				return
			}
		}
	}()
	fa, fb := typedFrame(macA, macB, 60, learnEtherType), typedFrame(macB, macA, 60, learnEtherType)
	deadline := time.After(learnWait)
	for {
		da.WriteFrame(fa)
		db.WriteFrame(fb)
		select {
		case err := <-got:
			return err
		case <-deadline:
			return fmt.Errorf("no frame crossed the bridge in %v", learnWait)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// frameBlast writes count frames from da to db and times their arrival.
func frameBlast(da, db *tap.Device, size, count int) (result, error) {
	var n atomic.Int64
	var first, last atomic.Int64
	base := time.Now()
	go func() {
		buf := make([]byte, 65536)
		for {
			k, err := db.ReadFrame(buf)
			if err != nil {
				return
			}
			if !isTest(buf[:k], macA, size) {
				continue
			}
			now := int64(time.Since(base))
			if n.Add(1) == 1 {
				first.Store(now)
			}
			last.Store(now)
		}
	}()
	f := frame(macA, macB, size)
	for i := 0; i < count; i++ {
		if err := da.WriteFrame(f); err != nil {
			return result{}, err
		}
	}
	seen, since := n.Load(), time.Now()
	for n.Load() < int64(count) && time.Since(since) < quiet {
		time.Sleep(2 * time.Millisecond)
		if k := n.Load(); k != seen {
			seen, since = k, time.Now()
		}
	}
	got := int(n.Load())
	d := time.Duration(last.Load() - first.Load())
	if got < 2 || d <= 0 {
		return result{}, fmt.Errorf("%d of %d frames arrived", got, count)
	}
	return result{MBps: mbps((got-1)*size, d), Frames: got}, nil
}

// framePingPong bounces one frame between da and db count times.
func framePingPong(da, db *tap.Device, size, count int) (result, error) {
	echoErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 65536)
		back := frame(macB, macA, size)
		for i := 0; i < count; i++ {
			if err := readFrom(db, buf, macA, size); err != nil {
				echoErr <- err
				return
			}
			if err := db.WriteFrame(back); err != nil {
				echoErr <- err
				return
			}
		}
		echoErr <- nil
	}()
	f := frame(macA, macB, size)
	buf := make([]byte, 65536)
	rtts := make([]time.Duration, count)
	for i := range rtts {
		t0 := time.Now()
		if err := da.WriteFrame(f); err != nil {
			return result{}, err
		}
		if err := readFrom(da, buf, macB, size); err != nil {
			return result{}, err
		}
		rtts[i] = time.Since(t0)
	}
	if err := <-echoErr; err != nil {
		return result{}, err
	}
	return result{Typical: halfMedian(rtts)}, nil
}

// readFrom reads until a size-byte frame from src arrives (skipping the
// learning frames and anything else the namespace sends).
func readFrom(d *tap.Device, buf []byte, src [6]byte, size int) error {
	for {
		n, err := d.ReadFrame(buf)
		if err != nil {
			return err
		}
		if isTest(buf[:n], src, size) {
			return nil
		}
	}
}

// isTest says f is a test frame of size bytes from src.
func isTest(f []byte, src [6]byte, size int) bool {
	return len(f) == size && [6]byte(f[6:12]) == src && binary.BigEndian.Uint16(f[12:14]) == etherType
}
