package decode

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// runString runs Run over files and returns its output.
func runString(t *testing.T, files []string, o Options) (string, Summary, error) {
	t.Helper()
	var out bytes.Buffer
	sum, err := Run(&out, files, o)
	return out.String(), sum, err
}

// TestFormats: the same frames as classic pcap (µs, ns, little- and
// big-endian) and as pcapng decode to the same lines.
func TestFormats(t *testing.T) {
	frames := synthFrames(t)
	dir := t.TempDir()
	ref := writePcap(t, filepath.Join(dir, "ref.pcap"), frames)
	want, _, err := runString(t, []string{ref}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	write := map[string]func(io.Writer) error{
		"ns.pcap": func(w io.Writer) error {
			pw := pcapgo.NewWriterNanos(w)
			if err := pw.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
				return err
			}
			for i, f := range frames {
				if err := pw.WritePacket(ciOf(i, f), f.data); err != nil {
					return err
				}
			}
			return nil
		},
		"be.pcap": func(w io.Writer) error { return writeBigEndian(w, frames) },
		"gzip.pcap.gz": func(w io.Writer) error {
			raw, err := os.ReadFile(ref)
			if err != nil {
				return err
			}
			zw := gzip.NewWriter(w)
			if _, err := zw.Write(raw); err != nil {
				return err
			}
			return zw.Close()
		},
		"ng.pcapng": func(w io.Writer) error {
			nw, err := pcapgo.NewNgWriter(w, layers.LinkTypeEthernet)
			if err != nil {
				return err
			}
			for i, f := range frames {
				if err := nw.WritePacket(ciOf(i, f), f.data); err != nil {
					return err
				}
			}
			return nw.Flush()
		},
	}
	for name, fn := range write {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := fn(&b); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			got, _, err := runString(t, []string{p}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s decodes differently:\n%s\nwant\n%s", name, got, want)
			}
		})
	}
}

func ciOf(i int, f capFrame) gopacket.CaptureInfo {
	n := f.length
	if n == 0 {
		n = len(f.data)
	}
	return gopacket.CaptureInfo{Timestamp: frameTime(i), CaptureLength: len(f.data), Length: n, InterfaceIndex: 0}
}

// writeBigEndian writes a big-endian microsecond pcap by hand (pcapgo only
// writes little-endian), as a big-endian host's libpcap would.
func writeBigEndian(w io.Writer, frames []capFrame) error {
	be := binary.BigEndian
	hdr := make([]byte, 24)
	be.PutUint32(hdr[0:], 0xa1b2c3d4)
	be.PutUint16(hdr[4:], 2)
	be.PutUint16(hdr[6:], 4)
	be.PutUint32(hdr[16:], 65535)
	be.PutUint32(hdr[20:], 1)
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for i, f := range frames {
		ci := ciOf(i, f)
		rec := make([]byte, 16)
		be.PutUint32(rec[0:], uint32(ci.Timestamp.Unix()))
		be.PutUint32(rec[4:], uint32(ci.Timestamp.Nanosecond()/1000))
		be.PutUint32(rec[8:], uint32(ci.CaptureLength))
		be.PutUint32(rec[12:], uint32(ci.Length))
		if _, err := w.Write(append(rec, f.data...)); err != nil {
			return err
		}
	}
	return nil
}

// TestUnreadable: missing files, non-captures, other link types and files
// cut inside a record are errors that name the file; the frames before the
// damage are still printed and counted, and other files still run.
func TestUnreadable(t *testing.T) {
	dir := t.TempDir()
	good := writePcap(t, filepath.Join(dir, "good.pcap"), synthFrames(t)[:5])
	full, _ := os.ReadFile(good)
	cut := filepath.Join(dir, "cut.pcap")
	os.WriteFile(cut, full[:len(full)-10], 0o644)
	garbage := filepath.Join(dir, "garbage.pcap")
	os.WriteFile(garbage, []byte("this is not a capture file at all"), 0o644)
	empty := filepath.Join(dir, "empty.pcap")
	os.WriteFile(empty, nil, 0o644)
	raw := filepath.Join(dir, "raw.pcap")
	var b bytes.Buffer
	pw := pcapgo.NewWriter(&b)
	pw.WriteFileHeader(65535, layers.LinkTypeRaw)
	os.WriteFile(raw, b.Bytes(), 0o644)
	ng := filepath.Join(dir, "raw.pcapng")
	b.Reset()
	nw, _ := pcapgo.NewNgWriter(&b, layers.LinkTypeRaw)
	nw.WritePacket(gopacket.CaptureInfo{CaptureLength: 20, Length: 20}, make([]byte, 20))
	nw.Flush()
	os.WriteFile(ng, b.Bytes(), 0o644)

	for _, c := range []struct {
		path, msg string
	}{
		{filepath.Join(dir, "missing.pcap"), "no such file"},
		{cut, "frame 5"},
		{garbage, "not a pcap"},
		{empty, "not a pcap"},
		{raw, "link type"},
		{ng, "link type"},
	} {
		out, sum, err := runString(t, []string{c.path, good}, Options{})
		if err == nil || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), filepath.Base(c.path)) {
			t.Errorf("%s: error %v, want one naming the file and saying %q", filepath.Base(c.path), err, c.msg)
		}
		if c.path != cut && !errors.Is(err, ErrFormat) && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: error %v is neither ErrFormat nor ErrNotExist", filepath.Base(c.path), err)
		}
		wantFrames := 5
		if c.path == cut {
			wantFrames = 9 // 4 before the cut, 5 from good.pcap
		}
		if sum.Frames != wantFrames || !strings.HasSuffix(out, sum.Line()+"\n") {
			t.Errorf("%s: frames=%d (want %d), output %q", filepath.Base(c.path), sum.Frames, wantFrames, out)
		}
	}
}
