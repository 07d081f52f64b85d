package main

// Kernel TCP between two namespaces on the bridge: the transport iWARP
// over a TAP replaces with the NIC's own TCP.

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
)

// A client's first 9 bytes tell the server the test: mode (0 bw, 1 lat),
// size, count.
const helloLen = 9

// tcpServe serves one client: it drains a bw run, then acknowledges with
// one byte, or echoes every message of a lat run.
func tcpServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return serveOne(ln)
}

// serveOne serves the first client of ln, then closes ln.
func serveOne(ln net.Listener) error {
	defer ln.Close()
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	var hello [helloLen]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil {
		return err
	}
	size := int(binary.BigEndian.Uint32(hello[1:5]))
	count := int(binary.BigEndian.Uint32(hello[5:9]))
	buf := make([]byte, max(size, 1<<16))
	if hello[0] == 0 {
		if _, err := io.CopyBuffer(io.Discard, io.LimitReader(c, int64(size)*int64(count)), buf); err != nil {
			return err
		}
		_, err = c.Write([]byte{1})
		return err
	}
	for i := 0; i < count; i++ {
		if _, err := io.ReadFull(c, buf[:size]); err != nil {
			return err
		}
		if _, err := c.Write(buf[:size]); err != nil {
			return err
		}
	}
	return nil
}

// tcpClient connects (retrying while the server starts) and runs the test.
func tcpClient(addr string, size, count int, lat bool) (result, error) {
	var c net.Conn
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		if c, err = net.Dial("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	var hello [helloLen]byte
	if lat {
		hello[0] = 1
	}
	binary.BigEndian.PutUint32(hello[1:5], uint32(size))
	binary.BigEndian.PutUint32(hello[5:9], uint32(count))
	if _, err := c.Write(hello[:]); err != nil {
		return result{}, err
	}
	buf := make([]byte, size)
	if lat {
		return tcpPingPong(c, buf, count)
	}
	t0 := time.Now()
	for i := 0; i < count; i++ {
		if _, err := c.Write(buf); err != nil {
			return result{}, err
		}
	}
	if _, err := io.ReadFull(c, buf[:1]); err != nil {
		return result{}, fmt.Errorf("server's acknowledgement: %w", err)
	}
	return result{MBps: mbps(size*count, time.Since(t0))}, nil
}

func tcpPingPong(c net.Conn, buf []byte, count int) (result, error) {
	rtts := make([]time.Duration, count)
	for i := range rtts {
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			return result{}, err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return result{}, err
		}
		rtts[i] = time.Since(t0)
	}
	return result{Typical: halfMedian(rtts)}, nil
}
