package server

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// makeBlocking clears O_NONBLOCK on fd, as a hostile client does to its
// end.
func makeBlocking(t *testing.T, fd int) {
	t.Helper()
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A channel whose client made its end blocking and never reads it: the
// daemon's sends never wait (far more than the socket holds), the bytes
// in it keep the client's end readable, a client writing into its end
// gets EPIPE rather than filling the daemon's, and a client that closed
// its end costs the daemon's sends nothing either.
func TestChannelSendsNeverWait(t *testing.T) {
	p, err := newWakePair(true)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p.own)
	makeBlocking(t, p.peer)
	sendAll := func(n int) {
		t.Helper()
		done := make(chan struct{})
		go func() {
			for range n {
				wakeUp(p.own)
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d wake-ups to a client that does not read did not return", n)
		}
	}
	sendAll(100000)
	if !readable(t, p.peer) {
		t.Fatal("the client's end is not readable after the daemon's sends")
	}
	if _, err := unix.Write(p.peer, []byte{1}); !errors.Is(err, unix.EPIPE) {
		t.Errorf("a client's write into its channel end: %v, want EPIPE", err)
	}
	unix.Close(p.peer)
	sendAll(1000)
}

// A doorbell whose client made its end blocking and filled it: the
// daemon's reader drains it, and closing the reader ends a wait at once;
// a client that closes its end ends the reader's wait with an error, not
// a spin on end-of-file.
func TestDoorbellReaderNeverWaits(t *testing.T) {
	p, err := newWakePair(false)
	if err != nil {
		t.Fatal(err)
	}
	r := newWakeReader(p.own)
	for unix.Sendto(p.peer, make([]byte, 4096), unix.MSG_DONTWAIT, nil) == nil {
	}
	makeBlocking(t, p.peer)
	waits := make(chan error, 1)
	go func() {
		var err error
		for err == nil {
			err = r.wait(0)
		}
		waits <- err
	}()
	time.Sleep(10 * time.Millisecond) // let it drain and sleep, or not: either way close must end it
	r.close()
	select {
	case <-waits:
	case <-time.After(10 * time.Second):
		t.Fatal("closing the doorbell's reader did not end its wait")
	}
	unix.Close(p.peer)

	p, err = newWakePair(false)
	if err != nil {
		t.Fatal(err)
	}
	r = newWakeReader(p.own)
	defer r.close()
	unix.Close(p.peer)
	if err := r.wait(0); !errors.Is(err, errWakeClosed) {
		t.Errorf("wait on a doorbell whose client closed its end: %v, want errWakeClosed", err)
	}
}
