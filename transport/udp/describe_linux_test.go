// The ancillary-data parser of the receive loop (reader.describe) on
// control bytes the kernel never wrote.

package udp

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// appendCmsg appends one control message to b as the kernel lays it out.
func appendCmsg(b []byte, level, typ int32, data []byte) []byte {
	h := unix.Cmsghdr{Level: level, Type: typ}
	h.SetLen(unix.CmsgLen(len(data)))
	start := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(len(data)))...)
	copy(b[start:], unsafe.Slice((*byte)(unsafe.Pointer(&h)), unix.SizeofCmsghdr))
	copy(b[start+unix.CmsgLen(0):], data)
	return b
}

// describeReader is a reader of one message whose control bytes a test
// sets, for an IPv4 endpoint with RecvTimestamps.
func describeReader() *reader {
	e := &Endpoint{cfg: Config{Addr: netip.MustParseAddr("127.0.0.1"), Port: DefaultPort,
		BatchSize: 1, MaxDatagram: 64, RecvTimestamps: true}}
	return newReader(e, nil)
}

// describeCtl parses ctl (cut to the reader's room) as message 0's and
// returns what it told, with the message's receive time.
func describeCtl(r *reader, ctl []byte) (arrival, int64) {
	n := copy(r.ctl[:r.ctlLen], ctl)
	r.hdrs[0].Hdr.SetControllen(n)
	var a arrival
	r.msgAt[0] = 0
	r.describe(0, &a)
	return a, r.msgAt[0]
}

// stampCtl is the control data of a datagram received at ns with TTL 9.
func stampCtl(ns int64) []byte {
	ts := unix.NsecToTimespec(ns)
	ttl := binary.NativeEndian.AppendUint32(nil, 9)
	b := appendCmsg(nil, unix.IPPROTO_IP, unix.IP_TTL, ttl)
	return appendCmsg(b, unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS,
		unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts)))
}

// TestDescribeTimestamp: the receive time is read beside the other
// ancillary data, and a truncated timespec is ignored.
func TestDescribeTimestamp(t *testing.T) {
	r := describeReader()
	const ns = 1_800_000_000_123_456_789
	ctl := stampCtl(ns)
	if a, at := describeCtl(r, ctl); at != ns || a.ttl != 9 {
		t.Errorf("at %d ttl %d, want %d and 9", at, a.ttl, int64(ns))
	}
	// The timestamp's cmsg claims fewer bytes than a timespec.
	short := append([]byte(nil), ctl...)
	off := unix.CmsgSpace(4)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&short[off]))
	h.SetLen(unix.CmsgLen(8))
	if a, at := describeCtl(r, short); at != 0 || a.ttl != 9 {
		t.Errorf("short timespec: at %d ttl %d, want 0 and 9", at, a.ttl)
	}
}

// FuzzDescribe: any control bytes parse without a panic or a read past
// them.
func FuzzDescribe(f *testing.F) {
	f.Add(stampCtl(1_800_000_000_123_456_789))
	f.Add(appendCmsg(nil, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, []byte{1, 0, 0, 0}))
	f.Add([]byte{})
	r := describeReader()
	f.Fuzz(func(t *testing.T, ctl []byte) {
		describeCtl(r, ctl)
	})
}
