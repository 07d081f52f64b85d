// Pcap reading, for tools and tests: replaying real captures (captures/,
// testdata/) into engines and checking what rnic wrote.
//
// One entry point takes whatever Wireshark or tcpdump produced, classic pcap
// (microsecond or nanosecond, either byte order) or pcapng, optionally
// gzipped, and yields Ethernet frames; anything else is refused with a clear
// error rather than decoded as garbage. The parsing itself is gopacket's
// pcapgo (nic/README.md, principle 6); this file only picks the reader.

package pcap

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Frame is one captured Ethernet frame.
type Frame struct {
	Timestamp time.Time
	Data      []byte // the captured bytes; owned by the caller
	Length    int    // the frame's length on the wire; above len(Data) if the capture truncated it
	// Comments are the record's comments (pcapng only): what a link's
	// faults did to it, for one ("rnic: lost").
	Comments []string
}

// Truncated reports whether the capture kept only part of the frame.
func (f Frame) Truncated() bool { return f.Length > len(f.Data) }

// Reader reads Ethernet frames from a capture.
type Reader struct {
	next func() ([]byte, gopacket.CaptureInfo, []string, error)
	ng   bool
	n    int
}

// Magic numbers that tell the formats apart (pcapng's section header block
// type reads the same in both byte orders).
const (
	magicPcapngSHB   = 0x0a0d0d0a
	magicPcapMicroLE = 0xa1b2c3d4
	magicPcapMicroBE = 0xd4c3b2a1
	magicPcapNanoLE  = 0xa1b23c4d
	magicPcapNanoBE  = 0x4d3cb2a1
)

// NewReader detects the capture format of r and reads its header. It
// fails if the capture is not Ethernet (pcapng: checked per packet, since
// interfaces may differ).
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(4)
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, zerr := gzip.NewReader(br)
		if zerr != nil {
			return nil, fmt.Errorf("pcap: gzipped capture: %w", zerr)
		}
		br = bufio.NewReader(zr)
		head, err = br.Peek(4)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("pcap: capture is empty or shorter than a file header")
		}
		return nil, err
	}
	switch binary.LittleEndian.Uint32(head) {
	case magicPcapngSHB:
		ng, err := pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{WantMixedLinkType: true})
		if err != nil {
			return nil, fmt.Errorf("pcap: pcapng: %w", err)
		}
		next := func() ([]byte, gopacket.CaptureInfo, []string, error) {
			data, ci, opts, err := ng.ReadPacketDataWithOptions()
			return data, ci, opts.Comments, err
		}
		return &Reader{next: next, ng: true}, nil
	case magicPcapMicroLE, magicPcapMicroBE, magicPcapNanoLE, magicPcapNanoBE:
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("pcap: classic pcap: %w", err)
		}
		if lt := pr.LinkType(); lt != layers.LinkTypeEthernet {
			return nil, linkTypeError(lt)
		}
		next := func() ([]byte, gopacket.CaptureInfo, []string, error) {
			data, ci, err := pr.ReadPacketData()
			return data, ci, nil, err
		}
		return &Reader{next: next}, nil
	}
	return nil, fmt.Errorf("pcap: not a pcap or pcapng capture (magic % x)", head)
}

func linkTypeError(lt layers.LinkType) error {
	return fmt.Errorf("pcap: capture link type %d (%v) is not Ethernet; only Ethernet captures are supported", uint32(lt), lt)
}

// Next returns the next frame, or io.EOF after the last one.
func (p *Reader) Next() (Frame, error) {
	data, ci, comments, err := p.next()
	if err != nil {
		if err == io.EOF {
			return Frame{}, io.EOF
		}
		return Frame{}, fmt.Errorf("pcap: capture record %d: %w", p.n+1, err)
	}
	if p.ng && len(ci.AncillaryData) > 0 {
		if lt, ok := ci.AncillaryData[0].(layers.LinkType); ok && lt != layers.LinkTypeEthernet {
			return Frame{}, fmt.Errorf("pcap: capture record %d: %w", p.n+1, linkTypeError(lt))
		}
	}
	p.n++
	return Frame{Timestamp: ci.Timestamp, Data: data, Length: ci.Length, Comments: comments}, nil
}

// ReadFrom reads every frame of a capture.
func ReadFrom(r io.Reader) ([]Frame, error) {
	pr, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	var frames []Frame
	for {
		f, err := pr.Next()
		if err == io.EOF {
			return frames, nil
		}
		if err != nil {
			return frames, err
		}
		frames = append(frames, f)
	}
}

// ReadFile reads every frame of the capture file at path.
func ReadFile(path string) ([]Frame, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	frames, err := ReadFrom(f)
	if err != nil {
		return frames, fmt.Errorf("%s: %w", path, err)
	}
	return frames, nil
}
