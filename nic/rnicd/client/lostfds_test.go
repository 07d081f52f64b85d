package client_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

// fakeDaemon accepts one client on a socket in a temporary directory,
// answers its OPEN and then answers every later request with answer.
func fakeDaemon(t *testing.T, answer func(h proto.Header) []byte) string {
	t.Helper()
	return scriptedDaemon(t, func(c *net.UnixConn, h proto.Header, _ []byte) bool {
		_, err := c.Write(answer(proto.Header{Op: h.Op, Kind: proto.KindReply, Seq: h.Seq}))
		return err == nil
	})
}

// sendOpenReply answers OPEN with a session doorbell (its memory and the
// client's end of its socket, as the daemon sends them).
func sendOpenReply(c *net.UnixConn, rh proto.Header) error {
	mem, err := memory.NewShared(proto.BellAreaLen)
	if err != nil {
		return err
	}
	defer mem.Close()
	bell, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(bell[0])
	defer unix.Close(bell[1])
	rh.NFDs = 2
	msg := proto.AppendMessage(nil, rh, &proto.OpenReply{Version: proto.Version, Name: "fake"})
	_, _, err = c.WriteMsgUnix(msg, unix.UnixRights(mem.Fd(), bell[1]), nil)
	return err
}

// A reply whose descriptors did not arrive (what the kernel does when the
// client is at its descriptor limit: MSG_CTRUNC) fails the call that waits
// for it. It used to be dropped as nonsense, and the call waited forever.
func TestReplyWithoutItsDescriptorsFailsTheCall(t *testing.T) {
	sock := fakeDaemon(t, func(h proto.Header) []byte {
		h.NFDs = 2 // announced, never sent
		return proto.AppendMessage(nil, h, &proto.Handle{H: 7})
	})
	dev, err := client.Open(ibv.Spec{Backend: ibv.BackendDaemon, Name: "fake", Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	done := make(chan error, 1)
	go func() {
		_, err := dev.AllocPD()
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, proto.ErrMalformed) {
			t.Fatalf("AllocPD with a reply short of its descriptors: %v, want ErrMalformed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AllocPD still waits 10 s after its reply arrived without its descriptors")
	}
}
