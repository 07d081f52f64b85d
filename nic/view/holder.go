// The holder: made in the view's namespaces, it fills them (interfaces,
// mounts), says it is ready, and lives as long as its connection to
// rnicd, holding the TAPs open. Later rnic execs join its namespaces.

package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/rnicd/client"
)

// RunHolder is rnic HolderCommand: "spawn PLAN" starts the holder in new
// namespaces and exits, "hold PLAN" is the holder. Each reports on
// descriptor 3.
func RunHolder(args []string) int {
	report := os.NewFile(3, "report")
	if report == nil || len(args) != 2 {
		fmt.Fprintln(os.Stderr, "rnic: "+HolderCommand+" is rnic exec's own")
		return 2
	}
	var p Plan
	if err := json.Unmarshal([]byte(args[1]), &p); err != nil {
		fmt.Fprintf(report, "error view: bad plan: %v\n", err)
		return 1
	}
	switch args[0] {
	case "spawn":
		return spawnHolder(&p, report)
	case "hold":
		return hold(&p, report)
	}
	return 2
}

// spawnHolder starts the holder in its namespaces, handing it the report
// descriptor, with its output to the view's log.
func spawnHolder(p *Plan, report *os.File) int {
	ps, err := pathsFor(p.Socket)
	if err != nil {
		fmt.Fprintf(report, "error %v\n", err)
		return 1
	}
	logf, err := os.OpenFile(ps.log, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		fmt.Fprintf(report, "error view: %v\n", err)
		return 1
	}
	defer logf.Close()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(report, "error view: %v\n", err)
		return 1
	}
	if os.Getuid() != 0 {
		// In the user namespace a root daemon is the overflow uid:
		// check it here, for the holder to pin (pin.go).
		pin, err := verify(p.Socket)
		if err != nil {
			fmt.Fprintf(report, "error %v\n", err)
			return 1
		}
		p.Pin = &pin
	}
	js, _ := json.Marshal(p)
	c := exec.Command(self, HolderCommand, "hold", string(js))
	c.Stdout, c.Stderr = logf, logf
	c.Dir = "/" // not to pin the directory rnic exec ran in
	c.ExtraFiles = []*os.File{report}
	c.SysProcAttr = holderAttr(p.Netns)
	if err := c.Start(); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EACCES) {
			fmt.Fprintf(report, "unavailable the kernel refuses the namespaces: %v\n", err)
		} else {
			fmt.Fprintf(report, "error view: %v\n", err)
		}
		return 1
	}
	c.Process.Release() // the holder outlives this process: init reaps it
	return 0
}

// hold is the holder.
func hold(p *Plan, report *os.File) int {
	conn, closers, err := setUp(p)
	if err != nil {
		fmt.Fprintf(report, "error %v\n", err)
		return 1
	}
	fmt.Fprintf(report, "ok %d\n", os.Getpid())
	report.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := conn.Read(buf); err != nil {
			break // the daemon went away: so does its view
		}
	}
	conn.Close()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i].Close()
	}
	fmt.Fprintln(os.Stderr, "view: rnicd went away: holder exits")
	return 0
}

// setUp takes the liveness lock, connects to the daemon, makes the
// interfaces and mounts and writes the pid file. It returns the
// connection to the daemon and what to close when it ends.
func setUp(p *Plan) (*net.UnixConn, []io.Closer, error) {
	ps, err := pathsFor(p.Socket)
	if err != nil {
		return nil, nil, err
	}
	alive, err := lockAlive(ps.alive)
	if err != nil {
		return nil, nil, err
	}
	if p.Pin != nil {
		// Before any other mount, and private: never the host's.
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return nil, nil, fmt.Errorf("view: make / private: %w", err)
		}
		if err := pinSocket(p.Socket, *p.Pin); err != nil {
			return nil, nil, err
		}
	}
	// Connected first: a daemon that goes during the setup ends it.
	conn, err := client.DialIdle(p.Socket)
	if err != nil {
		return nil, nil, err
	}
	closers := []io.Closer{alive}
	devs, err := Gather(p.Socket)
	if err != nil {
		return nil, nil, err
	}
	netdev := p.HostIf
	if p.Netns {
		var taps []io.Closer
		if netdev, taps, err = makeInterfaces(p, devs); err != nil {
			return nil, nil, err
		}
		closers = append(closers, taps...)
	}
	if err := mountView(devs, netdev, p.Netns); err != nil {
		return nil, nil, err
	}
	if err := writeHolder(ps.pid); err != nil {
		return nil, nil, fmt.Errorf("view: %w", err)
	}
	return conn, closers, nil
}

// aliveWait bounds the wait for the liveness lock: only a holder that is
// exiting may still hold it (the launcher found none alive under the
// creation lock).
const aliveWait = 10 * time.Second

// lockAlive takes the liveness lock, waiting a bounded time for a dying
// holder to let it go.
func lockAlive(path string) (*os.File, error) {
	deadline := time.Now().Add(aliveWait)
	for {
		f, err := lock(path, unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return f, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("view: another holder keeps %s", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
