// Tests of netstack.Conn as a RecordWriter: every TCP segment netstack
// emits begins and ends at a record boundary (the property MPA needs so
// that each segment starts with an FPDU, RFC 5044 §5), with backpressure
// at both levels (this package's SendBuffer and netstack's own send
// buffer), and the bytes arrive whole and in order, records or not.

package netstack_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/netstack"
	"github.com/rnic/rnic/transport/stream/streamtest"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// segmentLog collects the client's data segments as (stream offset,
// length), the offset counted from the first byte after the SYN, and,
// behind an offload NIC, the super-segments they were cut from as
// (offset, length, MSS).
type segmentLog struct {
	mu     sync.Mutex
	isn    uint32
	syn    bool
	segs   [][2]int
	supers [][3]int
}

// clientTCP returns the TCP header and payload of an IP packet (nil if it
// is not TCP).
func clientTCP(pkt []byte) header.TCP {
	var tcp header.TCP
	switch header.IPVersion(pkt) {
	case header.IPv4Version:
		ip := header.IPv4(pkt)
		if !ip.IsValid(len(pkt)) || ip.TransportProtocol() != header.TCPProtocolNumber {
			return nil
		}
		tcp = header.TCP(ip.Payload())
	case header.IPv6Version:
		ip := header.IPv6(pkt)
		if !ip.IsValid(len(pkt)) || ip.NextHeader() != uint8(header.TCPProtocolNumber) {
			return nil // the test stacks send no extension headers
		}
		tcp = header.TCP(ip.Payload())
	default:
		return nil
	}
	if len(tcp) < header.TCPMinimumSize || int(tcp.DataOffset()) > len(tcp) {
		return nil
	}
	return tcp
}

func (l *segmentLog) packet(fromA bool, pkt []byte) {
	tcp := clientTCP(pkt)
	if !fromA || tcp == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if tcp.Flags().Contains(header.TCPFlagSyn) {
		l.isn, l.syn = tcp.SequenceNumber(), true
		return
	}
	if n := len(tcp) - int(tcp.DataOffset()); n > 0 && l.syn {
		l.segs = append(l.segs, [2]int{int(tcp.SequenceNumber() - l.isn - 1), n})
	}
}

// superPacket logs a super-segment of the client's (the pump sees only
// the client's NIC's).
func (l *segmentLog) superPacket(pkt []byte, mss int) {
	tcp := clientTCP(pkt)
	if tcp == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(tcp) - int(tcp.DataOffset()); n > mss && l.syn {
		l.supers = append(l.supers, [3]int{int(tcp.SequenceNumber() - l.isn - 1), n, mss})
	}
}

// check reports segments that begin or end inside a record (ends are the
// records' cumulative ends) and returns the number of data segments and
// the largest payload.
func (l *segmentLog) check(t *testing.T, ends []int) (segments, largest int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	boundary := func(off int) bool {
		_, ok := slices.BinarySearch(ends, off)
		return off == 0 || ok
	}
	// crosses reports whether a record boundary lies strictly inside
	// [from, to).
	crosses := func(from, to int) bool {
		i, _ := slices.BinarySearch(ends, from+1)
		return i < len(ends) && ends[i] < to
	}
	// A segment either carries whole records (starts and ends on record
	// boundaries), or is a piece of one record: TCP cuts a record when the
	// peer's window is smaller than it (RecordWriter's documented limit),
	// and the next segment then carries the rest. What must never happen
	// is a segment that starts or ends inside a record and also crosses a
	// boundary: that is a stream that lost its alignment.
	bad, pieces := 0, 0
	for _, s := range l.segs {
		largest = max(largest, s[1])
		from, to := s[0], s[0]+s[1]
		aligned := boundary(from) && boundary(to)
		switch {
		case aligned:
		case !crosses(from, to):
			pieces++
		default:
			if bad++; bad <= 5 {
				i, _ := slices.BinarySearch(ends, from)
				t.Errorf("segment [%d, %d) cuts a record (record ends near: %v)", from, to, ends[max(i-1, 0):min(i+2, len(ends))])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d segments lost the record alignment", bad, len(l.segs))
	}
	if pieces > 0 {
		t.Logf("%d of %d segments carried a piece of one record (window-limited)", pieces, len(l.segs))
	}
	return len(l.segs), largest
}

// recordFeeder writes data as records of the given sizes, in batches of
// up to maxBatch records per WriteRecords, holding its lock across the
// call and resuming from the writable callback, as the engine does. With
// plainEvery > 0 every plainEvery-th batch goes by Write instead.
type recordFeeder struct {
	mu         sync.Mutex
	c          stream.Conn
	rw         stream.RecordWriter
	data       []byte
	ends       []int // cumulative record ends
	next       int   // index of the next record to write
	rng        *rand.Rand
	maxBatch   int
	plainEvery int
	batches    int
	refusals   int
	batchEnds  []int
	err        error
	done       chan struct{}
}

func newRecordFeeder(c stream.Conn, data []byte, ends []int, seed uint64, maxBatch, plainEvery int) *recordFeeder {
	f := &recordFeeder{c: c, rw: c.(stream.RecordWriter), data: data, ends: ends, maxBatch: maxBatch,
		plainEvery: plainEvery, rng: rand.New(rand.NewPCG(seed, 7)), done: make(chan struct{})}
	c.SetWritable(f.pump)
	return f
}

func (f *recordFeeder) pump() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.next < len(f.ends) && f.err == nil {
		k := min(1+f.rng.IntN(f.maxBatch), len(f.ends)-f.next)
		start := 0
		if f.next > 0 {
			start = f.ends[f.next-1]
		}
		f.batchEnds = f.batchEnds[:0]
		for _, e := range f.ends[f.next : f.next+k] {
			f.batchEnds = append(f.batchEnds, e-start)
		}
		b := f.data[start:f.ends[f.next+k-1]]
		var err error
		if f.plainEvery > 0 && f.batches%f.plainEvery == f.plainEvery-1 {
			_, err = f.c.Write(b)
		} else {
			_, err = f.rw.WriteRecords(b, f.batchEnds)
		}
		if errors.Is(err, stream.ErrWouldBlock) {
			f.refusals++
			return
		}
		if err != nil {
			f.err = err
			close(f.done)
			return
		}
		f.batches++
		f.next += k
	}
	if f.next == len(f.ends) && f.err == nil {
		f.err = f.c.Close()
		close(f.done)
	}
}

// A recordPattern returns the cumulative ends of n records of at most
// most bytes.
type recordPattern func(seed uint64, n, most int) (ends []int)

var (
	mixedRecords recordPattern = recordSizes
	// exactRecords: every record is most bytes.
	exactRecords recordPattern = func(_ uint64, n, most int) (ends []int) {
		for i := 1; i <= n; i++ {
			ends = append(ends, i*most)
		}
		return ends
	}
	// messageRecords: what the iWARP engine sends, messages of 1 byte to
	// 64 KiB each cut into records of most bytes and a shorter last one.
	messageRecords recordPattern = func(seed uint64, n, most int) (ends []int) {
		r := rand.New(rand.NewPCG(seed, 13))
		off := 0
		for len(ends) < n {
			for m := 1 + r.IntN(64<<10); m > 0 && len(ends) < n; m -= most {
				off += min(m, most)
				ends = append(ends, off)
			}
		}
		return ends
	}
)

// recordSizes draws n record sizes in [1, max], a quarter of them exactly
// max.
func recordSizes(seed uint64, n, most int) (ends []int) {
	r := rand.New(rand.NewPCG(seed, 11))
	off := 0
	for range n {
		s := most
		if r.IntN(4) != 0 {
			s = 1 + r.IntN(most)
		}
		off += s
		ends = append(ends, off)
	}
	return ends
}

// recordPair connects a client on w.a to a server on w.b at addr.
func recordPair(t *testing.T, e *endChecks, w *nsWire, cfg stream.TCPConfig, addr string) (c, s stream.Conn, cs, ss *streamtest.Sink) {
	t.Helper()
	c, s, cs, ss, _, _ = contractPair(t, e, netstack.New(w.a, testNIC, cfg), netstack.New(w.b, testNIC, cfg), addr)
	return c, s, cs, ss
}

// finish waits for the client's FIN at the server, closes the server's
// side and waits for it at the client.
func finish(t *testing.T, s stream.Conn, cs, ss *streamtest.Sink) {
	t.Helper()
	ss.Wait(t, "server")
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	cs.Wait(t, "client")
}

// TestNetstackRecordsAligned: records of mixed sizes up to SegmentPayload,
// written in batches with backpressure, never straddle a segment; records
// of exactly SegmentPayload each make one full segment. Netstack's own
// send buffer is small (64 KiB) so that records also wait for room there.
func TestNetstackRecordsAligned(t *testing.T) {
	for _, addr := range nsServerAddrs {
		for _, tc := range []struct {
			name    string
			sendBuf int // netstack's
			sizes   recordPattern
		}{
			{"mixed", 4 << 20, mixedRecords},
			{"mixed-small-netstack-buffer", 64 << 10, mixedRecords},
			{"exact", 64 << 10, exactRecords},
			{"messages", 4 << 20, messageRecords},
		} {
			t.Run(addr+"/"+tc.name, func(t *testing.T) {
				e := newEndChecks(t)
				streamtest.CheckNoLeak(t)
				w := newNSWireBuf(t, tc.sendBuf)
				var log segmentLog
				watch := log.packet
				w.watch.Store(&watch)
				c, s, cs, ss := recordPair(t, e, w, stream.TCPConfig{SendBuffer: 256 << 10, ReadBuffer: 64 << 10}, addr)
				sp := c.(stream.RecordWriter).SegmentPayload()
				want := 1500 - 20 - 20 - 40 // IPv4, TCP, timestamps + 3 SACK blocks
				if netip.MustParseAddr(addr).Is6() {
					want -= 20
				}
				if sp != want {
					t.Fatalf("SegmentPayload = %d, want %d", sp, want)
				}
				ends := tc.sizes(uint64(len(addr)), 6000, sp)
				data := streamtest.Pattern(21, ends[len(ends)-1])
				f := newRecordFeeder(c, data, ends, 5, 64, 0)
				go f.pump()
				<-f.done
				if f.err != nil {
					t.Fatal(f.err)
				}
				finish(t, s, cs, ss)
				streamtest.CheckDelivered(t, "server", ss, data, io.EOF)
				segs, largest := log.check(t, ends)
				t.Logf("%d records (%d bytes) in %d batches, %d refused; %d segments, largest %d, SegmentPayload %d",
					len(ends), len(data), f.batches, f.refusals, segs, largest, sp)
				if largest > sp {
					t.Errorf("a segment carried %d bytes, more than SegmentPayload %d", largest, sp)
				}
				if largest != sp && slices.Contains(ends, sp) {
					t.Errorf("records of SegmentPayload bytes went in segments of at most %d", largest)
				}
				if f.refusals == 0 {
					if tc.sendBuf < 4<<20 {
						t.Error("the send buffer never filled: backpressure untested")
					} else {
						t.Log("the send buffer never filled")
					}
				}
			})
		}
	}
}

// TestNetstackRecordsMixedWithWrite: WriteRecords and Write interleaved
// deliver every byte once, in order, and Buffered drains to 0.
func TestNetstackRecordsMixedWithWrite(t *testing.T) {
	e := newEndChecks(t)
	streamtest.CheckNoLeak(t)
	w := newNSWireBuf(t, 64<<10)
	c, s, cs, ss := recordPair(t, e, w, stream.TCPConfig{SendBuffer: 128 << 10, ReadBuffer: 16 << 10}, nsServerAddrs[0])
	ends := recordSizes(3, 8000, 4000) // some larger than a segment
	data := streamtest.Pattern(22, ends[len(ends)-1])
	f := newRecordFeeder(c, data, ends, 9, 32, 3)
	go f.pump()
	<-f.done
	if f.err != nil {
		t.Fatal(f.err)
	}
	finish(t, s, cs, ss)
	streamtest.CheckDelivered(t, "server", ss, data, io.EOF)
	if c.Buffered() != 0 {
		t.Errorf("Buffered = %d after the end", c.Buffered())
	}
	if f.refusals == 0 {
		t.Error("the send buffer never filled: backpressure untested")
	}
}

// TestNetstackWriteRecordsErrors: ends that do not partition the bytes
// are refused with nothing written; after Close, ErrClosed.
func TestNetstackWriteRecordsErrors(t *testing.T) {
	e := newEndChecks(t)
	streamtest.CheckNoLeak(t)
	w := newNSWire(t)
	c, s, cs, ss := recordPair(t, e, w, stream.TCPConfig{}, nsServerAddrs[0])
	rw := c.(stream.RecordWriter)
	b := []byte("0123456789")
	for _, ends := range [][]int{nil, {5}, {5, 5, 10}, {0, 10}, {6, 4, 10}, {5, 11}} {
		if _, err := rw.WriteRecords(b, ends); !errors.Is(err, stream.ErrBadRecords) {
			t.Errorf("ends %v: %v, want ErrBadRecords", ends, err)
		}
	}
	if n, err := rw.WriteRecords(b, []int{3, 10}); n != len(b) || err != nil {
		t.Fatalf("WriteRecords = %d, %v", n, err)
	}
	if n, err := rw.WriteRecords(nil, nil); n != 0 || err != nil {
		t.Errorf("empty WriteRecords = %d, %v", n, err)
	}
	c.Close()
	if _, err := rw.WriteRecords(b, []int{10}); !errors.Is(err, stream.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	finish(t, s, cs, ss)
	streamtest.CheckDelivered(t, "server", ss, b, io.EOF)
}
