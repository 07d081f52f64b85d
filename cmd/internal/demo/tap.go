// The demo in the TAP mode: each NIC owns a TAP device, and the steps cross
// a real Ethernet between them. The narration's "wire:" lines then come
// from rnic0's capture point on its TAP, which sees every frame both NICs
// send to each other (and the ARP/ND in between, which the narration
// leaves out).

package demo

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/roce/wire"
)

// tapNIC is what the demo uses of a TAP-mode NIC.
type tapNIC struct {
	nic     *embedded.NIC
	streams embedded.StreamNetwork
	closer  io.Closer
}

// openTAP opens a NIC in the TAP mode; tests replace it.
var openTAP = func(cfg tapnic.Config) (*tapNIC, error) {
	n, err := tapnic.Open(cfg)
	if err != nil {
		return nil, err
	}
	return &tapNIC{nic: n.NIC, streams: n.Streams, closer: n}, nil
}

// tapAddrs checks two TAP configs and picks the NICs' addresses: rnic1's
// (b) given or its first, rnic0's (a) given or its first of b's family.
func tapAddrs(ta, tb *tapnic.Config, a, b netip.Addr) (netip.Addr, netip.Addr, error) {
	if ta == nil || tb == nil {
		return a, b, fmt.Errorf("%w: the demo needs two NICs: give two TAPs (one for rnic0, one for rnic1)", ErrConfig)
	}
	own := func(t *tapnic.Config) ([]netip.Addr, error) {
		if t.TAP == "" || len(t.Prefixes) == 0 {
			return nil, fmt.Errorf("%w: a TAP needs a name and an address", ErrConfig)
		}
		out := make([]netip.Addr, len(t.Prefixes))
		for i, p := range t.Prefixes {
			out[i] = p.Addr().Unmap()
		}
		return out, nil
	}
	oa, err := own(ta)
	if err != nil {
		return a, b, err
	}
	ob, err := own(tb)
	if err != nil {
		return a, b, err
	}
	if ta.TAP == tb.TAP {
		return a, b, fmt.Errorf("%w: rnic0 and rnic1 both on TAP %s", ErrConfig, ta.TAP)
	}
	pick := func(given netip.Addr, own []netip.Addr, family netip.Addr, tap string) (netip.Addr, error) {
		if given.IsValid() {
			for _, x := range own {
				if x == given.Unmap() {
					return x, nil
				}
			}
			return given, fmt.Errorf("%w: %v is not one of TAP %s's %v", ErrConfig, given, tap, own)
		}
		for _, x := range own {
			if !family.IsValid() || x.Is4() == family.Is4() {
				return x, nil
			}
		}
		return given, fmt.Errorf("%w: TAP %s has no address of %v's family", ErrConfig, tap, family)
	}
	if b, err = pick(b, ob, netip.Addr{}, tb.TAP); err != nil {
		return a, b, err
	}
	if a, err = pick(a, oa, b, ta.TAP); err != nil {
		return a, b, err
	}
	if a.Is4() != b.Is4() {
		return a, b, fmt.Errorf("%w: rnic0's %v and rnic1's %v are of different families", ErrConfig, a, b)
	}
	return a, b, nil
}

// openTAPs opens both NICs of the RoCE demo on their TAPs.
func (d *demo) openTAPs() error {
	cfg := &d.cfg
	if cfg.LinkA != nil || cfg.LinkB != nil {
		return fmt.Errorf("%w: the TAP mode has its own links", ErrConfig)
	}
	var err error
	if cfg.AddrA, cfg.AddrB, err = tapAddrs(cfg.TAPA, cfg.TAPB, cfg.AddrA, cfg.AddrB); err != nil {
		return err
	}
	ta, tb := *cfg.TAPA, *cfg.TAPB
	for _, t := range []*tapnic.Config{&ta, &tb} {
		if t.MTU == 0 {
			t.MTU = cfg.MTU
		}
		// The steps connect at path MTU 1024 (rxe's rule: MTU − 80).
		if t.MTU < 1024+80 {
			return fmt.Errorf("%w: TAP %s's MTU %d does not carry path MTU 1024 (at least 1104)", ErrConfig, t.TAP, t.MTU)
		}
	}
	ta.Name, tb.Name = "rnic0", "rnic1"
	if cfg.TraceEvents != nil {
		ta.TraceEvents, tb.TraceEvents = d.traceEvents("rnic0"), d.traceEvents("rnic1")
	}
	// rnic0's capture point feeds the narration, and the user's capture.
	cap := &frameLog{rec: d.rec, out: cfg.Pcap}
	if ta.Pcap, err = embedded.NewPcapWriter(cap); err != nil {
		return err
	}
	d.rec.flush = ta.Pcap.Flush
	na, err := openTAP(ta)
	if err != nil {
		return fmt.Errorf("demo: rnic0 on TAP %s: %w", ta.TAP, err)
	}
	d.rec.name(na.nic.MAC, "rnic0")
	da := tapDevice(na)
	if d.a, err = d.objects("rnic0", da, da, cfg.AddrA, d.roceQPs); err != nil {
		return err
	}
	nb, err := openTAP(tb)
	if err != nil {
		d.a.close()
		return fmt.Errorf("demo: rnic1 on TAP %s: %w", tb.TAP, err)
	}
	d.rec.name(nb.nic.MAC, "rnic1")
	db := tapDevice(nb)
	if d.b, err = d.objects("rnic1", db, db, cfg.AddrB, d.roceQPs); err != nil {
		d.a.close()
		return err
	}
	return nil
}

// tapDevice is a TAP NIC's verbs device; closing it closes the NIC and
// its TAP.
func tapDevice(n *tapNIC) ibv.Device {
	return n.nic.Verbs(nic.IBVOptions{Close: n.closer.Close})
}

// frameLog is the writer under rnic0's TAP pcap: it takes the pcap stream
// apart again, record by record, hands each RoCEv2 frame to the recorder
// and every frame to the user's capture.
type frameLog struct {
	rec *recorder
	out *embedded.PcapWriter
	mu  sync.Mutex
	buf []byte
	hdr bool // the file header has gone by
}

// Pcap layout: a 24-byte file header, then per record a 16-byte header
// (seconds, nanoseconds, captured length, original length; the writer's
// byte order is the host's, little-endian on every platform rnic runs on)
// and the captured bytes.
const (
	pcapFileHeader   = 24
	pcapRecordHeader = 16
)

func (l *frameLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if !l.hdr {
		if len(l.buf) < pcapFileHeader {
			return len(p), nil
		}
		l.buf, l.hdr = l.buf[pcapFileHeader:], true
	}
	for len(l.buf) >= pcapRecordHeader {
		le := binary.LittleEndian
		n := int(le.Uint32(l.buf[8:12]))
		if len(l.buf) < pcapRecordHeader+n {
			break
		}
		ts := time.Unix(int64(le.Uint32(l.buf[0:4])), int64(le.Uint32(l.buf[4:8])))
		frame := l.buf[pcapRecordHeader : pcapRecordHeader+n]
		if l.out != nil {
			l.out.WriteFrame(ts, frame)
		}
		if isRoCE(frame) {
			l.rec.add(l.rec.nameOf(frame), frame)
		}
		l.buf = l.buf[pcapRecordHeader+n:]
	}
	// Keep the partial record only.
	l.buf = append([]byte(nil), l.buf...)
	return len(p), nil
}

// isRoCE reports whether an Ethernet frame is UDP to the RoCEv2 port.
func isRoCE(f []byte) bool {
	if len(f) < 14 {
		return false
	}
	switch binary.BigEndian.Uint16(f[12:14]) {
	case 0x0800:
		ihl := int(f[14]&0x0f) * 4
		return len(f) >= 14+ihl+4 && f[14+9] == 17 && binary.BigEndian.Uint16(f[14+ihl+2:]) == wire.UDPPort
	case 0x86dd:
		return len(f) >= 14+40+4 && f[14+6] == 17 && binary.BigEndian.Uint16(f[14+40+2:]) == wire.UDPPort
	}
	return false
}
