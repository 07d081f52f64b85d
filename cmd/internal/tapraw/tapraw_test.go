package main

import (
	"net"
	"testing"
	"time"

	"github.com/rnic/rnic/tap/taptest"
)

// TestFrames: frames from one TAP's fd reach the other's through the
// bridge, in both measurements; without the bridge's forwarding the
// learning exchange fails and so does the run.
func TestFrames(t *testing.T) {
	n := taptest.New(t, 83)
	res, err := runFrames(n.Name, n.Bridge, "trw0", "trw1", 1514, 500, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Frames < 2 || res.MBps <= 0 {
		t.Errorf("bw: %+v", res)
	}
	if res, err = runFrames(n.Name, n.Bridge, "trw0", "trw1", 82, 50, true); err != nil {
		t.Fatal(err)
	}
	if res.Typical <= 0 {
		t.Errorf("lat: %+v", res)
	}
}

// TestFramesNoBridge: two TAPs on no bridge are not connected, and the
// run says so instead of printing a figure.
func TestFramesNoBridge(t *testing.T) {
	n := taptest.New(t, 84)
	defer func(w time.Duration) { learnWait = w }(learnWait)
	learnWait = 300 * time.Millisecond
	if _, err := runFrames(n.Name, "", "trw0", "trw1", 1514, 10, false); err == nil {
		t.Fatal("frames crossed between two unbridged TAPs")
	}
}

// TestTCP: the client's bw and lat runs against serveOne on loopback.
func TestTCP(t *testing.T) {
	for _, lat := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- serveOne(ln) }()
		res, err := tcpClient(ln.Addr().String(), 4096, 100, lat)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-served; err != nil {
			t.Errorf("server: %v", err)
		}
		if (lat && res.Typical <= 0) || (!lat && res.MBps <= 0) {
			t.Errorf("lat %v: %+v", lat, res)
		}
	}
}
