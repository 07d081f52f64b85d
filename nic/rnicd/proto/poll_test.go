package proto_test

import (
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/transport/poll"
)

func TestPollsForOtherProcessesOnly(t *testing.T) {
	if proto.PollsFor(int32(os.Getpid())) {
		t.Error("polls for a peer in its own process: it would take a P the peer needs")
	}
	if !proto.PollsFor(int32(os.Getppid())) {
		t.Error("does not poll for a peer in another process")
	}
}

// socketPair returns the two ends of a unixpacket pair, as rnicd's.
func socketPair(t *testing.T) (a, b *net.UnixConn) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "rnicd")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

func TestPollRecv(t *testing.T) {
	a, b := socketPair(t)
	buf, oob := make([]byte, 64), make([]byte, 64)
	var p poll.Poller

	start := time.Now()
	p.Received()
	if _, ok := proto.PollRecv(b, buf, oob, &p); ok {
		t.Fatal("PollRecv returned a message nobody sent")
	}
	if d := time.Since(start); runtime.GOMAXPROCS(0) > 1 && d < poll.Time {
		t.Errorf("PollRecv gave up after %v, before its window of %v", d, poll.Time)
	}
	if poll.Polling() != 0 {
		t.Errorf("PollRecv kept its polling slot (%d held)", poll.Polling())
	}

	// A message sent while it polls is taken, whole, with its descriptor.
	go a.WriteMsgUnix([]byte("request"), unix.UnixRights(int(os.Stdin.Fd())), nil)
	r, ok := pollUntil(t, b, buf, oob, &p)
	if !ok || r.Err != nil || string(buf[:r.N]) != "request" {
		t.Fatalf("PollRecv = %+v, %v, %q; want the request", r, ok, buf[:r.N])
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:r.OOBN])
	if err != nil || len(msgs) != 1 {
		t.Fatalf("control messages %v, %v; want the descriptor", msgs, err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		t.Fatalf("descriptors %v, %v", fds, err)
	}
	flags, _ := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFD, 0)
	unix.Close(fds[0])
	if flags&unix.FD_CLOEXEC == 0 {
		t.Error("a received descriptor is not close-on-exec (ReadMsgUnix's are)")
	}

	// The end of the connection is a result too: the reader stops.
	a.Close()
	if r, ok := pollUntil(t, b, buf, oob, &p); !ok || r.N != 0 {
		t.Fatalf("after the peer closed: %+v, %v; want a zero-length read", r, ok)
	}
}

// pollUntil polls, window after window, until PollRecv gets something
// (10 s at most).
func pollUntil(t *testing.T, c *net.UnixConn, buf, oob []byte, p *poll.Poller) (proto.Received, bool) {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		p.Received()
		if r, ok := proto.PollRecv(c, buf, oob, p); ok {
			return r, true
		}
		if runtime.GOMAXPROCS(0) == 1 {
			time.Sleep(time.Millisecond) // no polling on one P: the write must get the CPU
		}
	}
	t.Fatal("nothing received within 10s")
	return proto.Received{}, false
}
