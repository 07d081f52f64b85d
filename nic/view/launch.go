// Starting the holder of a view. rnic exec asks for the holder of its
// (uid, socket) under the creation lock; when none lives it decides the
// plan here, in the host's namespaces, and starts the holder through a
// short-lived intermediate, so the holder is nobody's child (its parent
// would otherwise be the program rnic exec becomes, which would have to
// reap it).

package view

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/rnicd/client"
)

// HolderCommand is the hidden rnic subcommand that runs RunHolder.
const HolderCommand = "__view-holder"

// ErrUnavailable is wrapped by Ensure's error when the view cannot be
// made here at all: the kernel refuses a user namespace, or the daemon
// is another user's.
var ErrUnavailable = errors.New("no view of the devices")

// readyTimeout bounds the holder's setup: the daemon's replies and the
// mounts, on a busy machine.
const readyTimeout = 60 * time.Second

// Ensure returns the holder of the view of the rnicd on socket (an
// absolute path), starting one if none lives. holder is the argv that
// runs this package's RunHolder (rnic HolderCommand).
func Ensure(socket string, holder []string) (*Holder, error) {
	p, err := pathsFor(socket)
	if err != nil {
		return nil, err
	}
	l, err := lock(p.lock, unix.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if h, err := liveHolder(p); h != nil || err != nil {
		return h, err
	}
	pl, err := makePlan(socket)
	if err != nil {
		return nil, err
	}
	if err := spawn(pl, holder, p.log); err != nil {
		return nil, err
	}
	return liveHolder(p)
}

// makePlan asks the daemon for its devices and decides where their
// addresses go.
func makePlan(socket string) (*Plan, error) {
	st, err := client.QueryStat(socket)
	if err != nil {
		return nil, err
	}
	// A daemon of neither this user nor root was refused by QueryStat's
	// dial (client.trustDaemon); a root one is pinned (pin.go).
	devs := make([]Device, len(st.Devices))
	for i, d := range st.Devices {
		devs[i] = Device{Index: i, Name: d.Name, GIDs: d.GIDs}
	}
	return plan(socket, devs, hostAddrs()), nil
}

// spawn starts the intermediate and waits for the holder's word: "ok
// PID" once the view is ready, or "error MESSAGE"; log is where the
// holder's output goes.
func spawn(pl *Plan, holder []string, log string) error {
	js, err := json.Marshal(pl)
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	c := exec.Command(holder[0], append(holder[1:], "spawn", string(js))...)
	c.ExtraFiles = []*os.File{w}
	err = c.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("view: %w", err)
	}
	c.Wait()
	r.SetReadDeadline(time.Now().Add(readyTimeout))
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		return fmt.Errorf("view: the holder did not report (its log: %s): %w", log, err)
	}
	_, err = parseReport(strings.TrimSuffix(line, "\n"))
	return err
}

// parseReport reads the holder's one line.
func parseReport(line string) (int, error) {
	if v, ok := strings.CutPrefix(line, "ok "); ok {
		pid, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("view: holder says %q", line)
		}
		return pid, nil
	}
	if v, ok := strings.CutPrefix(line, "unavailable "); ok {
		return 0, fmt.Errorf("%w: %s", ErrUnavailable, v)
	}
	return 0, errors.New(strings.TrimPrefix(line, "error "))
}

// holderAttr is how the holder is made: a user namespace mapping this
// uid and gid to themselves, with the capabilities for mounts and
// netlink kept across exec as ambient ones (a uid that is not 0 in the
// namespace loses them otherwise), and mount and network namespaces; as
// root, the mount and network namespaces alone.
func holderAttr(netns bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_NEWNS}
	if netns {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}
	}
	return a
}
