// Pcap writing: every frame the NIC sent or received, in a file Wireshark
// opens.
//
// The file format is gopacket's pcapgo (nic/README.md, principle 6):
// classic pcap, Ethernet link type, nanosecond timestamps, because
// virtual-time runs put many frames within one microsecond. The writer is shared by everything that
// captures (both directions of a link, several tees), hence the mutex.

package pcap

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Snaplen is the snapshot length written in the file header (libpcap's
// maximum); longer frames are truncated in the capture.
const Snaplen = 262144

// ErrClosed is returned by a Writer after Close.
var ErrClosed = errors.New("pcap: writer closed")

// Writer writes Ethernet frames to a classic pcap stream (or a pcapng one:
// NewNgWriter) with nanosecond timestamps. It is safe for concurrent use. Errors are sticky:
// after the first failed write every call returns that error, since the file
// is no longer well formed, and Close reports it, so capture points that
// cannot return an error (a link's event loop) lose nothing silently.
type Writer struct {
	mu     sync.Mutex
	buf    *bufio.Writer
	pw     *pcapgo.Writer   // classic pcap, or
	ng     *pcapgo.NgWriter // pcapng, whose records also keep comments
	file   io.Closer        // closed by Close when the writer opened it
	frames int
	err    error
	closed bool
}

// NewWriter writes a pcap file header to w and returns a writer for the
// frames. Output is buffered: call Flush or Close. Close does not close w.
func NewWriter(w io.Writer) (*Writer, error) {
	buf := bufio.NewWriterSize(w, 64<<10)
	pw := pcapgo.NewWriterNanos(buf)
	if err := pw.WriteFileHeader(Snaplen, layers.LinkTypeEthernet); err != nil {
		return nil, err
	}
	return &Writer{buf: buf, pw: pw}, nil
}

// NewNgWriter is NewWriter for a pcapng stream: one Ethernet interface
// with nanosecond timestamps, and each record may carry a comment
// (WriteFrameNote), which Wireshark shows as the packet's comment.
func NewNgWriter(w io.Writer) (*Writer, error) {
	buf := bufio.NewWriterSize(w, 64<<10)
	intf := pcapgo.DefaultNgInterface
	intf.LinkType, intf.SnapLength, intf.OS, intf.Name = layers.LinkTypeEthernet, Snaplen, "", "rnic"
	ng, err := pcapgo.NewNgWriterInterface(buf, intf, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "rnic"}})
	if err != nil {
		return nil, err
	}
	return &Writer{buf: buf, ng: ng}, nil
}

// IsNg says whether a capture file at path is written as pcapng: its
// name ends in ".pcapng".
func IsNg(path string) bool { return strings.HasSuffix(path, ".pcapng") }

// Create creates (or truncates) the file at path and returns a writer
// whose Close also closes the file: pcapng when IsNg(path), else classic.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	open := NewWriter
	if IsNg(path) {
		open = NewNgWriter
	}
	p, err := open(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	p.file = f
	return p, nil
}

// WriteFrame appends one frame captured at ts. A zero ts would make pcapgo
// use the wall clock, so simulated runs always pass virtual timestamps.
// Where frames are recorded as they happen, use WriteFrameNow: a timestamp
// taken before the call may be older than a record another goroutine writes
// in between.
func (p *Writer) WriteFrame(ts time.Time, frame []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writeLocked(ts, frame, "")
}

// WriteFrameNote is WriteFrame with a comment on the record (pcapng); a
// classic pcap has no place for it and keeps the frame alone.
func (p *Writer) WriteFrameNote(ts time.Time, frame []byte, note string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writeLocked(ts, frame, note)
}

// WriteFrameNow appends one frame stamped now(), read under the writer's
// lock: the order of the records is the order of their timestamps, whatever
// the goroutines recording at once (a capture point records a frame at the
// moment it leaves or arrives, so the file's order is causal and its
// timestamps never decrease as long as now does not).
func (p *Writer) WriteFrameNow(now func() time.Time, frame []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writeLocked(now(), frame, "")
}

// WriteFramesNow appends frames that arrived or left together, all stamped
// with one now() read under the lock.
func (p *Writer) WriteFramesNow(now func() time.Time, frames [][]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ts := now()
	for _, f := range frames {
		if err := p.writeLocked(ts, f, ""); err != nil {
			return err
		}
	}
	return nil
}

func (p *Writer) writeLocked(ts time.Time, frame []byte, note string) error {
	if p.err != nil {
		return p.err
	}
	if p.closed {
		return ErrClosed
	}
	data := frame
	if len(data) > Snaplen {
		data = data[:Snaplen]
	}
	ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(data), Length: len(frame)}
	var err error
	switch {
	case p.ng == nil:
		err = p.pw.WritePacket(ci, data)
	case note != "":
		err = p.ng.WritePacketWithOptions(ci, data, pcapgo.NgPacketOptions{Comments: []string{note}})
	default:
		err = p.ng.WritePacket(ci, data)
	}
	if err != nil {
		p.err = err
		return err
	}
	p.frames++
	return nil
}

// Frames reports how many frames have been written.
func (p *Writer) Frames() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.frames
}

// Flush writes buffered records to the underlying writer.
func (p *Writer) Flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flushLocked()
}

func (p *Writer) flushLocked() error {
	if p.err != nil {
		return p.err
	}
	if p.closed {
		return ErrClosed
	}
	p.err = p.flushBuffers()
	return p.err
}

// flushBuffers writes out the pcapng writer's buffer, then ours.
func (p *Writer) flushBuffers() error {
	if p.ng != nil {
		if err := p.ng.Flush(); err != nil {
			return err
		}
	}
	return p.buf.Flush()
}

// Close flushes, closes the file if Create opened it, and reports the
// first error the writer met. Closing twice returns ErrClosed.
func (p *Writer) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.closed = true
	err := p.err
	if err == nil {
		if err = p.flushBuffers(); err != nil {
			p.err = err
		}
	}
	if p.file != nil {
		if cerr := p.file.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
