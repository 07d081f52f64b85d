package poll

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// socketPair returns a connected datagram pair: a datagram written to [1]
// makes [0] readable.
func socketPair(t *testing.T) [2]int {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds
}

func drain(t *testing.T, fd int) {
	t.Helper()
	var b [16]byte
	if _, err := unix.Read(fd, b[:]); err != nil {
		t.Fatal(err)
	}
}

// receivedLong is Received with a window of an hour: the test's
// expectations then hold however long a busy machine stops it between
// calls.
func receivedLong(p *Poller) { p.until = time.Now().Add(time.Hour) }

// TestPollerParksForAnotherSocket: a poller stops polling, freeing its P,
// when another watched socket holds a datagram its parked reader must be
// woken for; not when that socket's reader polls itself, nor for its own
// socket, nor once the socket is no longer watched.
func TestPollerParksForAnotherSocket(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	own, other := socketPair(t), socketPair(t)
	var p, q Poller
	defer p.Watch(own[0])()
	stopQ := q.Watch(other[0])

	receivedLong(&p)
	if !p.Again() {
		t.Fatal("no datagram anywhere, inside the window: the poller parked")
	}
	unix.Write(own[1], []byte("x"))
	if !p.Again() {
		t.Error("a datagram on its own socket made the poller park")
	}
	drain(t, own[0])

	unix.Write(other[1], []byte("y"))
	receivedLong(&q)
	if !q.Again() {
		t.Fatal("the other reader could not take the second slot")
	}
	if !p.Again() {
		t.Error("parked for a socket whose reader polls it itself")
	}
	q.Release()
	if p.Again() {
		t.Error("polled on while a parked reader's socket held a datagram")
	}
	if Polling() != 0 {
		t.Errorf("the slot was kept after parking: %d polling", Polling())
	}
	receivedLong(&p)
	if p.Again() {
		t.Error("a new window polled on over the waiting datagram")
	}

	stopQ()
	receivedLong(&p)
	if !p.Again() {
		t.Error("parked for a socket no longer watched")
	}
	p.Release()
}
