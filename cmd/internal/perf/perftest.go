// perftest's side channel (linux-rdma/perftest, perftest_communication.c):
// the fixed-size messages the two sides trade over TCP port 18515 in
// lock-step, the client writing first.
//
//	client                                   server
//	version   char[16] "6.06"    ──▶ ◀──     version
//	sys data  be32 cycle_buffer  ──▶ ◀──     be32 cycle_buffer
//	          be32 cache_line    ──▶ ◀──     be32 cache_line
//	mtu       char[2] "3\0"      ──▶ ◀──     (the ibv_mtu enum, ASCII)
//	keys      108-byte key (per QP) ──▶ ◀──  key
//	hand shakes: QP 0's key again ──▶ ◀──    (2 before a WRITE/READ/atomic
//	                                          bw loop, 3 before the others)
//	            ... the test ...
//	hand shake                   ──▶ ◀──     (write_lat: none; both close)
//	bw report (WRITE/READ/atomic bw only): be64 size, be64 iters, and the
//	          doubles bw_peak, bw_avg, msgRate_avg as big-endian IEEE 754
//	          bits, each field traded on its own; then a hand shake
//	"done\0"  (both sides write it without waiting, then close;
//	          write_lat: none)
//
// A perftest peer needs nothing more. Two rnic peers recognise each other
// by the bytes after the NUL of the version string (perftest reads the
// version with atof, which stops at the NUL): the client then sends its
// test parameters right after the versions, so an rnic server needs no
// flags, and after the last hand shake the two trade rnic's own data
// check, raw baseline and result (channel.go) before "done".

package perf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/rnic/rnic/nic/verbs"
)

// Sizes of perftest's fixed messages.
const (
	versionSize  = 16 // MAX_VERSION
	sysDataSize  = 4  // each of cycle_buffer and cache_line_size
	mtuMsgSize   = 2  // char[2] for a remote ≥ 5.31
	reportField  = 8  // each field of struct bw_report_data on the wire
	reportFields = 5  // size, iters, bw_peak, bw_avg, msgRate_avg
	doneMsgSize  = 5  // "done" and its NUL
)

// perftestVersion is the version perftest 4.5 (bookworm's) announces.
const perftestVersion = "6.06"

// rnicMark follows the NUL of an rnic side's version string.
const rnicMark = "rnic-perf/2"

// Our system data: perftest's defaults, a page of cycle buffer and
// 64-byte cache lines. Each side takes the larger of its own and the
// peer's.
const (
	cycleBuffer   = 4096
	cacheLineSize = 64
)

// ErrPerftestMsg is wrapped when a side-channel message is malformed.
var ErrPerftestMsg = errors.New("perf: malformed perftest message")

// versionMsg is this side's version string: perftest's version, a NUL and
// rnic's mark.
func versionMsg() [versionSize]byte {
	var m [versionSize]byte
	copy(m[:], perftestVersion)
	copy(m[len(perftestVersion)+1:], rnicMark)
	return m
}

// ParseVersion reads a peer's version string: the version number (the
// text up to the NUL, as perftest's atof reads it) and whether the peer
// is rnic. perftest refuses a remote older than 5.70; so does rnic.
func ParseVersion(m []byte) (version float64, rnic bool, err error) {
	if len(m) != versionSize {
		return 0, false, fmt.Errorf("%w: version of %d bytes, want %d", ErrPerftestMsg, len(m), versionSize)
	}
	text, rest, _ := bytes.Cut(m, []byte{0})
	v, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return 0, false, fmt.Errorf("%w: version %q", ErrPerftestMsg, text)
	}
	if v < 5.70 {
		return v, false, fmt.Errorf("%w: the peer's perftest %q is older than 5.70", ErrConfig, text)
	}
	return v, bytes.HasPrefix(rest, []byte(rnicMark)), nil
}

// sysDataMsg is one of the system data values on the wire.
func sysDataMsg(v uint32) [sysDataSize]byte {
	var m [sysDataSize]byte
	binary.BigEndian.PutUint32(m[:], v)
	return m
}

// mtuMsg is the MTU message: the enum as one ASCII digit and a NUL.
func mtuMsg(m verbs.MTU) [mtuMsgSize]byte {
	return [mtuMsgSize]byte{'0' + byte(m), 0}
}

// ParseMTU reads the peer's MTU message.
func ParseMTU(m []byte) (verbs.MTU, error) {
	if len(m) != mtuMsgSize || m[1] != 0 || m[0] < '0'+byte(verbs.MTU256) || m[0] > '0'+byte(verbs.MTU4096) {
		return 0, fmt.Errorf("%w: MTU message %q", ErrPerftestMsg, m)
	}
	return verbs.MTU(m[0] - '0'), nil
}

// BWReport is struct bw_report_data as xchg_bw_reports trades it.
type BWReport struct {
	Size        uint64
	Iters       uint64
	PeakMBps    float64
	AvgMBps     float64
	MsgRateMpps float64
}

// fields is the report's five wire fields in order.
func (r BWReport) fields() [reportFields][reportField]byte {
	var f [reportFields][reportField]byte
	for i, v := range []uint64{r.Size, r.Iters, math.Float64bits(r.PeakMBps),
		math.Float64bits(r.AvgMBps), math.Float64bits(r.MsgRateMpps)} {
		binary.BigEndian.PutUint64(f[i][:], v)
	}
	return f
}

// ParseBWReport reads the five fields, 40 bytes in all.
func ParseBWReport(b []byte) (BWReport, error) {
	if len(b) != reportFields*reportField {
		return BWReport{}, fmt.Errorf("%w: report of %d bytes, want %d", ErrPerftestMsg, len(b), reportFields*reportField)
	}
	u := func(i int) uint64 { return binary.BigEndian.Uint64(b[i*reportField:]) }
	return BWReport{Size: u(0), Iters: u(1), PeakMBps: math.Float64frombits(u(2)),
		AvgMBps: math.Float64frombits(u(3)), MsgRateMpps: math.Float64frombits(u(4))}, nil
}

// doneMsg is the last message of each side.
var doneMsg = [doneMsgSize]byte{'d', 'o', 'n', 'e', 0}

// handShakes is how many hand shakes follow the key exchange before the
// test loop: perftest's WRITE, READ and atomic bw tests make two, the
// SEND bw test and every latency test three.
func (c *Config) handShakes() int {
	if c.Mode == ModeBW && c.Op != OpSend {
		return 2
	}
	return 3
}

// endHandShake says whether a hand shake follows the test loop: in all
// but perftest's write_lat, whose sides just close the connection when
// their loops end (no hand shake, no "done").
func (c *Config) endHandShake() bool { return c.Op != OpWrite || c.Mode != ModeLat }

// tradesReports says whether the test ends with xchg_bw_reports: the bw
// tests whose server's CPU takes no part (WRITE, READ, atomics), so that
// the server can print the client's figures.
func (c *Config) tradesReports() bool { return c.Mode == ModeBW && c.Op != OpSend }

// exchange writes out and reads len(in) bytes: the client writes first,
// the server reads first (perftest's ctx_xchg_data). A peer known to be
// rnic may answer with an error line instead, returned wrapping ErrPeer.
func (c *channel) exchange(client bool, out, in []byte) error {
	if client {
		if err := c.write(out); err != nil {
			return err
		}
		return c.readFixed(in)
	}
	if err := c.readFixed(in); err != nil {
		return err
	}
	return c.write(out)
}

func (c *channel) write(b []byte) error {
	if _, err := c.conn.Write(b); err != nil {
		return fmt.Errorf("perf: side channel: %w", err)
	}
	return nil
}

// readFixed fills b. When the peer is rnic (or not known yet), a message
// starting with '{' is its error line: no perftest message starts so
// where an rnic peer could fail (the version, the hex key messages).
func (c *channel) readFixed(b []byte) error {
	if c.mayFail {
		if p, err := c.r.Peek(1); err == nil && p[0] == '{' {
			var v struct{}
			if err := c.recv(&v); err != nil {
				return err
			}
			return fmt.Errorf("%w: an unexpected message", ErrPeer)
		}
	}
	if _, err := io.ReadFull(c.r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("perf: side channel: %w", err)
	}
	return nil
}

// xchgVersions trades the version strings; it returns whether the peer is
// rnic.
func (c *channel) xchgVersions(client bool) (bool, error) {
	c.mayFail = true
	out := versionMsg()
	var in [versionSize]byte
	if err := c.exchange(client, out[:], in[:]); err != nil {
		return false, err
	}
	_, rnic, err := ParseVersion(in[:])
	c.peerRnic, c.mayFail = rnic, rnic
	return rnic, err
}

// xchgSysData trades cycle_buffer and cache_line_size (perftest's
// check_sys_data); both sides keep the larger values, which rnic has no
// use for but checks for sense.
func (c *channel) xchgSysData(client bool) error {
	for _, v := range []uint32{cycleBuffer, cacheLineSize} {
		out := sysDataMsg(v)
		var in [sysDataSize]byte
		if err := c.exchange(client, out[:], in[:]); err != nil {
			return err
		}
		if binary.BigEndian.Uint32(in[:]) == 0 {
			return fmt.Errorf("%w: system data %x", ErrPerftestMsg, in)
		}
	}
	return nil
}

// xchgMTU trades the MTUs (perftest's check_mtu) and returns the smaller.
func (c *channel) xchgMTU(client bool, own verbs.MTU) (verbs.MTU, error) {
	out := mtuMsg(own)
	var in [mtuMsgSize]byte
	if err := c.exchange(client, out[:], in[:]); err != nil {
		return 0, err
	}
	peer, err := ParseMTU(in[:])
	if err != nil {
		return 0, err
	}
	return min(own, peer), nil
}

// xchgKey trades key messages (the key exchange of one QP, or a hand
// shake, which sends QP 0's key again) and returns the peer's.
func (c *channel) xchgKey(client bool, k Key) (Key, error) {
	out := k.MarshalGID()
	var in [KeyMsgSizeGID]byte
	if err := c.exchange(client, out[:], in[:]); err != nil {
		return Key{}, err
	}
	return ParseKey(in[:])
}

// xchgKeys trades the key messages of every QP, own[i] for the peer's
// i-th, in the order and format of n xchgKey calls, but without a round
// trip per QP: all of own are written at once by a goroutine while the
// peer's are read, so neither side's socket buffer has to hold the other's
// keys (10,000 of them are ~1 MB each way). A perftest peer, which trades
// them one by one, reads the same bytes.
func (c *channel) xchgKeys(own []Key) ([]Key, error) {
	out := make([]byte, 0, len(own)*KeyMsgSizeGID)
	for _, k := range own {
		m := k.MarshalGID()
		out = append(out, m[:]...)
	}
	wrote := make(chan error, 1)
	go func() { wrote <- c.write(out) }()
	peers := make([]Key, len(own))
	var in [KeyMsgSizeGID]byte
	for i := range peers {
		if err := c.readFixed(in[:]); err != nil {
			return nil, err // the writer ends when the channel closes
		}
		k, err := ParseKey(in[:])
		if err != nil {
			return nil, err
		}
		peers[i] = k
	}
	if err := <-wrote; err != nil {
		return nil, err
	}
	return peers, nil
}

// xchgReports trades bw reports field by field and returns the peer's.
func (c *channel) xchgReports(client bool, own BWReport) (BWReport, error) {
	out := own.fields()
	var in [reportFields * reportField]byte
	for i := range out {
		if err := c.exchange(client, out[i][:], in[i*reportField:(i+1)*reportField]); err != nil {
			return BWReport{}, err
		}
	}
	return ParseBWReport(in[:])
}

// sayDone writes "done" and reads the peer's, which perftest writes
// without waiting for ours; a peer that closes instead is no error.
func (c *channel) sayDone() error {
	if err := c.write(doneMsg[:]); err != nil {
		return err
	}
	var in [doneMsgSize]byte
	c.readFixed(in[:])
	return nil
}
