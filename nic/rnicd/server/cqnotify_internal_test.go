package server

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/rnicd/proto"
)

// CQs on one channel fire through its set and its one socket: the
// client's end becomes readable and the set names exactly the CQs that fired;
// a slot out of range neither sets a bit nor wakes the client.
func TestChannelSlotFires(t *testing.T) {
	words := make([]uint64, proto.ChannelAreaLen/8)
	events, err := proto.NewChannelEvents(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), proto.ChannelAreaLen))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := newWakePair(true)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pair.peer)
	defer unix.Close(pair.own)
	fd := pair.own
	var n cqNotifier = channelSlot{events: events, fd: fd, slot: proto.MaxChannelCQs}
	n.signal()
	if readable(t, pair.peer) {
		t.Fatal("a slot out of range woke the channel")
	}
	fired := []uint32{999, 3, 64 * 64}
	for _, s := range fired {
		n = channelSlot{events: events, fd: fd, slot: s}
		n.signal()
	}
	if !readable(t, pair.peer) {
		t.Fatal("channel socket not readable after its CQs fired")
	}
	got := map[uint32]bool{}
	events.Take(func(i uint32) { got[i] = true })
	if len(got) != len(fired) {
		t.Fatalf("took %v, want %v", got, fired)
	}
	for _, s := range fired {
		if !got[s] {
			t.Fatalf("slot %d fired but not taken (took %v)", s, got)
		}
	}
	n.release() // the channel's socket stays open
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		t.Fatalf("a CQ's release closed its channel's socket: %v", err)
	}
}

// readable reports whether fd polls readable now, draining it if so.
func readable(t *testing.T, fd int) bool {
	t.Helper()
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return false
	}
	var b [64]byte
	unix.Read(fd, b[:])
	return true
}
