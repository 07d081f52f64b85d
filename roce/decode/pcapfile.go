package decode

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Reader reads Ethernet frames from a capture file: classic pcap
// (microsecond or nanosecond timestamps, either byte order, optionally
// gzipped) or pcapng. Other link types are refused with an error.
type Reader struct {
	next  func() ([]byte, gopacket.CaptureInfo, error)
	close func() error
	n     int // frames read
}

// pcapngMagic is the block type of a pcapng Section Header Block; it reads
// the same in both byte orders.
const pcapngMagic = 0x0A0D0D0A

// ErrFormat is wrapped by errors about input that is not a supported
// capture (not pcap/pcapng, wrong link type, cut short).
var ErrFormat = errors.New("unsupported or damaged capture")

// Open opens a capture file.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.close = f.Close
	return r, nil
}

// NewReader reads a capture from r.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("%w: not a pcap or pcapng file (%d bytes)", ErrFormat, len(magic))
	}
	if binary.LittleEndian.Uint32(magic) == pcapngMagic {
		ng, err := pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{WantMixedLinkType: true})
		if err != nil {
			return nil, fmt.Errorf("%w: pcapng: %v", ErrFormat, err)
		}
		rd := &Reader{close: func() error { return nil }}
		rd.next = func() ([]byte, gopacket.CaptureInfo, error) {
			data, ci, err := ng.ReadPacketData()
			if err != nil {
				return nil, ci, err
			}
			if len(ci.AncillaryData) > 0 {
				if lt, ok := ci.AncillaryData[0].(layers.LinkType); ok && lt != layers.LinkTypeEthernet {
					return nil, ci, linkTypeError(lt)
				}
			}
			return data, ci, nil
		}
		return rd, nil
	}
	pr, err := pcapgo.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%w: not a pcap or pcapng file: %v", ErrFormat, err)
	}
	if lt := pr.LinkType(); lt != layers.LinkTypeEthernet {
		return nil, linkTypeError(lt)
	}
	return &Reader{next: pr.ReadPacketData, close: func() error { return nil }}, nil
}

func linkTypeError(lt layers.LinkType) error {
	return fmt.Errorf("%w: link type %d (%v) not supported, only Ethernet (1)", ErrFormat, uint32(lt), lt)
}

// ReadFrame returns the next frame, or io.EOF after the last one. A file
// cut short in the middle of a record gives an ErrFormat error.
func (r *Reader) ReadFrame() ([]byte, gopacket.CaptureInfo, error) {
	data, ci, err := r.next()
	switch {
	case err == nil:
		r.n++
		return data, ci, nil
	case errors.Is(err, io.EOF): // a clean end; a cut record is io.ErrUnexpectedEOF
		return nil, ci, io.EOF
	case errors.Is(err, ErrFormat):
		return nil, ci, fmt.Errorf("frame %d: %w", r.n+1, err)
	}
	return nil, ci, fmt.Errorf("%w: frame %d: %v", ErrFormat, r.n+1, err)
}

// Close closes the file.
func (r *Reader) Close() error { return r.close() }
