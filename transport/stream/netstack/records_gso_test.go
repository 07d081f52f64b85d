// Tests of netstack.Conn's records behind a NIC with segmentation offload
// (the TAP with --tap-offload): runs of records of exactly SegmentPayload
// bytes go to netstack in one Write, which it sends as one super-segment
// that the offload cuts every SegmentPayload bytes from its start, so
// each segment still begins with a record, while the peer's window is
// open; what netstack does with queued writes under load bounds the rest
// (see the file comment of netstack.go).

package netstack_test

import (
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/streamtest"
)

// messageEnds cuts a message of n bytes into records of sp bytes and a
// shorter last one, as the iWARP engine cuts a message into FPDUs; the
// ends are relative to the message.
func messageEnds(n, sp int) (ends []int) {
	for off := 0; off < n; {
		off += min(sp, n-off)
		ends = append(ends, off)
	}
	return ends
}

// TestNetstackRecordsGSOWindowOpen: with offload, messages written one at
// a time while the window is open (each delivered before the next is
// written) go out as super-segments of many records, and every segment
// the offload cuts from them begins and ends on a record boundary, the
// short last record of each message included.
func TestNetstackRecordsGSOWindowOpen(t *testing.T) {
	for _, addr := range nsServerAddrs {
		t.Run(addr, func(t *testing.T) {
			e := newEndChecks(t)
			streamtest.CheckNoLeak(t)
			w := newNSWireGSO(t, 4<<20, true)
			var log segmentLog
			watch := log.packet
			w.watch.Store(&watch)
			c, s, cs, ss := recordPair(t, e, w, stream.TCPConfig{}, addr)
			rw := c.(stream.RecordWriter)
			sp := rw.SegmentPayload()
			r := rand.New(rand.NewPCG(uint64(len(addr)), 3))
			var data []byte
			var ends []int
			for m := range 60 {
				n := 1 + r.IntN(64<<10)
				if m%5 == 0 {
					n = sp * (1 + r.IntN(40)) // no short last record
				}
				msg := streamtest.Pattern(uint64(m), n)
				me := messageEnds(n, sp)
				if _, err := rw.WriteRecords(msg, me); err != nil {
					t.Fatal(err)
				}
				for _, end := range me {
					ends = append(ends, len(data)+end)
				}
				data = append(data, msg...)
				waitDelivered(t, ss, len(data))
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			finish(t, s, cs, ss)
			streamtest.CheckDelivered(t, "server", ss, data, io.EOF)
			segs, largest := log.check(t, ends)
			pieces := int(w.superPieces.Load())
			t.Logf("%d records (%d bytes) in 60 messages; %d segments, %d of them cut from %d super-segments; largest %d, SegmentPayload %d",
				len(ends), len(data), segs, pieces, w.supers.Load(), largest, sp)
			if largest != sp {
				t.Errorf("largest segment %d bytes, want SegmentPayload %d", largest, sp)
			}
			// Writing records one by one, netstack sends each at once in a
			// segment of its own while the window is open: only the
			// writes that waited for the congestion window would share a
			// super-segment.
			if pieces < segs*3/4 {
				t.Errorf("only %d of %d segments were cut from super-segments: records did not go to netstack in batches", pieces, segs)
			}
		})
	}
}

// waitDelivered waits until the sink holds n bytes.
func waitDelivered(t *testing.T, ss *streamtest.Sink, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Microsecond) {
		ss.Mu.Lock()
		got := len(ss.Got)
		ss.Mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d bytes delivered after 30s", got, n)
		}
	}
}

// TestNetstackRecordsGSOUnderLoad: with offload, records written as fast
// as backpressure allows arrive whole and in order; netstack cuts each
// super-segment every MSS from its start, so one that begins on a record
// boundary keeps every cut on a record boundary up to its first record
// shorter than SegmentPayload (the property batching relies on). Where
// netstack merged a short record with later writes queued behind it, or
// cut at the peer's window (which even records all of SegmentPayload
// bytes meet when the reader lags), segments begin inside a record:
// their share is logged, not bounded (the file comment of netstack.go
// says why).
func TestNetstackRecordsGSOUnderLoad(t *testing.T) {
	for _, addr := range nsServerAddrs {
		for _, tc := range []struct {
			name    string
			sendBuf int // netstack's
			sizes   recordPattern
		}{
			{"exact", 64 << 10, exactRecords},
			{"messages", 4 << 20, messageRecords},
			{"messages-small-netstack-buffer", 64 << 10, messageRecords},
		} {
			t.Run(addr+"/"+tc.name, func(t *testing.T) {
				e := newEndChecks(t)
				streamtest.CheckNoLeak(t)
				w := newNSWireGSO(t, tc.sendBuf, true)
				var log segmentLog
				watch, superWatch := log.packet, log.superPacket
				w.watch.Store(&watch)
				w.superWatch.Store(&superWatch)
				c, s, cs, ss := recordPair(t, e, w, stream.TCPConfig{SendBuffer: 256 << 10, ReadBuffer: 64 << 10}, addr)
				sp := c.(stream.RecordWriter).SegmentPayload()
				ends := tc.sizes(uint64(len(addr)), 6000, sp)
				data := streamtest.Pattern(23, ends[len(ends)-1])
				f := newRecordFeeder(c, data, ends, 5, 64, 0)
				go f.pump()
				<-f.done
				if f.err != nil {
					t.Fatal(f.err)
				}
				finish(t, s, cs, ss)
				streamtest.CheckDelivered(t, "server", ss, data, io.EOF)
				unaligned := log.checkSupers(t, ends, sp)
				t.Logf("%d records (%d bytes); %d segments, %d cut from %d super-segments; %d segments begin inside a record",
					len(ends), len(data), len(log.segs), w.superPieces.Load(), w.supers.Load(), unaligned)
				if w.supers.Load() == 0 {
					t.Error("no super-segments: offload untested")
				}
			})
		}
	}
}

// checkSupers checks the cuts of every super-segment that begins on a
// record boundary up to its first record other than sp bytes, and returns
// how many wire segments begin inside a record.
func (l *segmentLog) checkSupers(t *testing.T, ends []int, sp int) (unaligned int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	boundary := func(off int) bool {
		_, ok := slices.BinarySearch(ends, off)
		return off == 0 || ok
	}
	bad := 0
	for _, su := range l.supers {
		start, end, mss := su[0], su[0]+su[1], su[2]
		if !boundary(start) {
			continue
		}
		if mss != sp {
			t.Errorf("super-segment at %d cut every %d bytes, SegmentPayload is %d", start, mss, sp)
		}
		for cut := start + mss; cut < end; cut += mss {
			if !boundary(cut) {
				i, _ := slices.BinarySearch(ends, cut)
				if full := i > 0 && ends[i-1] >= start && allFull(ends, start, ends[i-1], sp); full {
					if bad++; bad <= 5 {
						t.Errorf("super-segment [%d, %d) cut at %d inside a record after records of %d bytes only", start, end, cut, sp)
					}
				}
				break
			}
		}
	}
	for _, s := range l.segs {
		if !boundary(s[0]) {
			unaligned++
		}
	}
	return unaligned
}

// allFull reports whether every record between stream offsets from and
// to (both record boundaries) is sp bytes long.
func allFull(ends []int, from, to, sp int) bool {
	i, _ := slices.BinarySearch(ends, from+1)
	prev := from
	for ; i < len(ends) && ends[i] <= to; i++ {
		if ends[i]-prev != sp {
			return false
		}
		prev = ends[i]
	}
	return true
}
