// Command tapraw is `make bench`'s baselines for the TAP rows: what the
// frames alone cost through the TAPs rnic's NICs use, and what the
// kernel's TCP does between two namespaces on the same bridge.
//
//	tapraw frames -netns NS -bridge BR -tap A -tap B -size S -count N -mode bw|lat
//	tapraw tcp-serve -addr IP:PORT
//	tapraw tcp-client -addr IP:PORT -size S -count N -mode bw|lat
//
// frames opens two TAPs on the bridge (as a TAP-mode NIC does, one fd
// each) and sends frames of S bytes from A's fd to B's: bw writes N
// frames, one write each, and times them from the first arrival to the
// last; lat ping-pongs one frame N times. tcp-serve/tcp-client are run in
// two namespaces (ip netns exec): bw writes N messages of S bytes, one
// write each; lat ping-pongs an S-byte message. Each prints one JSON
// object: {"mbps": ...} or {"t_typical_usec": ...} (half the median round
// trip, as perftest's ping-pong latency), MB = 2^20 bytes as perftest's.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"
)

// result is the JSON a run prints.
type result struct {
	MBps    float64 `json:"mbps,omitempty"`
	Typical float64 `json:"t_typical_usec,omitempty"`
	Frames  int     `json:"frames,omitempty"` // bw frames: how many arrived
}

type stringList []string

func (l *stringList) String() string     { return fmt.Sprint(*l) }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tapraw frames|tcp-serve|tcp-client [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	var taps stringList
	fs.Var(&taps, "tap", "a TAP (twice: the sender's, then the receiver's)")
	netns := fs.String("netns", "", "the TAPs' namespace")
	bridge := fs.String("bridge", "", "the bridge the TAPs join")
	addr := fs.String("addr", "", "TCP address")
	size := fs.Int("size", 1514, "frame or message size in bytes")
	count := fs.Int("count", 10000, "frames or messages (bw) or round trips (lat)")
	mode := fs.String("mode", "bw", "bw or lat")
	fs.Parse(os.Args[2:])
	var res result
	var err error
	switch os.Args[1] {
	case "frames":
		if len(taps) != 2 {
			err = fmt.Errorf("frames needs -tap twice")
			break
		}
		res, err = runFrames(*netns, *bridge, taps[0], taps[1], *size, *count, *mode == "lat")
	case "tcp-serve":
		err = tcpServe(*addr)
	case "tcp-client":
		res, err = tcpClient(*addr, *size, *count, *mode == "lat")
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tapraw:", err)
		os.Exit(1)
	}
	if os.Args[1] != "tcp-serve" {
		json.NewEncoder(os.Stdout).Encode(res)
	}
}

// mbps is bytes over d in MB (2^20) per second.
func mbps(bytes int, d time.Duration) float64 {
	return float64(bytes) / (1 << 20) / d.Seconds()
}

// halfMedian is half the median of round trips, in µs.
func halfMedian(rtts []time.Duration) float64 {
	slices.Sort(rtts)
	n := len(rtts)
	m := rtts[n/2]
	if n%2 == 0 {
		m = (rtts[n/2-1] + rtts[n/2]) / 2
	}
	return float64(m) / 1e3 / 2
}
