package dropin

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// A daemon of another protocol version refuses the library's OPEN, and
// the program is told so in words, not only by a failed open: an
// unmodified ibv_devinfo against a stand-in daemon that lists a device
// and answers OPEN as an rnicd of the next version would (StatusVersion,
// the daemon's message).
func TestOpenOtherVersionSaysSo(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "ibv_devinfo")
	dir, err := userDir(build.dir, fmt.Sprintf("fakerd-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "rnicd.sock")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); os.RemoveAll(dir) })
	if err := os.Chown(sock, build.uid, build.gid); err != nil {
		t.Fatal(err)
	}
	refusal := fmt.Sprintf("rnicd: protocol version mismatch: client speaks version %d, this rnicd only %d",
		proto.Version, proto.Version+1)
	go serveOtherVersion(ln, refusal)

	p := start(t, "ibv_devinfo", []string{"RNIC_SOCKET=" + sock, "LD_LIBRARY_PATH=" + filepath.Join(build.dir, "lib")},
		nil, "ibv_devinfo", "-d", "rnic0")
	p.wait(time.After(programTimeout))
	out := p.out.String()
	if p.ok() {
		t.Fatalf("ibv_devinfo opened a device of a daemon that refused its version:\n%s", p.report())
	}
	for _, want := range []string{fmt.Sprintf("this library speaks rnicd protocol version %d", proto.Version), refusal} {
		if !strings.Contains(out, want) {
			t.Errorf("the program's output lacks %q:\n%s", want, p.report())
		}
	}
}

// serveOtherVersion answers each connection's requests as an rnicd of
// another version: STAT_DEVICES with one device, OPEN with StatusVersion
// and refusal, anything else with StatusUnknownOp.
func serveOtherVersion(ln *net.UnixListener, refusal string) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			buf := make([]byte, proto.MaxMessage)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				h, _, err := proto.DecodeMessage(buf[:n], 0)
				if err != nil {
					return
				}
				var rep []byte
				switch h.Op {
				case proto.OpStatDevices:
					dev := proto.StatDevice{Name: "rnic0", State: verbs.PortActive, ActiveMTU: verbs.MTU1024, LinkMTU: 1500,
						GIDs: []netip.Addr{netip.MustParseAddr("::ffff:127.0.0.2")}}
					rep = proto.AppendMessage(nil, proto.Header{Op: h.Op, Kind: proto.KindReply, Seq: h.Seq},
						&proto.StatDevicesReply{Devices: []proto.StatDevice{dev}})
				case proto.OpOpen:
					rep = proto.AppendError(nil, h.Op, h.Seq, proto.StatusVersion, refusal)
				default:
					rep = proto.AppendError(nil, h.Op, h.Seq, proto.StatusUnknownOp, "not served here")
				}
				if _, err := c.Write(rep); err != nil {
					return
				}
			}
		}()
	}
}
