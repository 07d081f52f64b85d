// The lab, driven through its own scripts (lab/vm.sh and
// lab/build-image.sh beside this file): the guest image, the namespace and
// bridge, booting and stopping this harness's guests, and running commands
// in them.

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Lab runs vm.sh.
type Lab struct {
	Dir string    // the lab directory (vm.sh, build-image.sh)
	Log io.Writer // progress
	// booted are the guests this run started (and stops at the end).
	booted []*Guest
}

// labState is vm.sh's state directory (its LAB_STATE default): a guest's
// /lab is labState/NAME/share.
const labState = "/run/rnic-lab"

// Share is the host directory that is g's /lab.
func (l *Lab) Share(g *Guest) string { return filepath.Join(labState, g.Name, "share") }

// vm runs vm.sh with args and returns its combined output.
func (l *Lab) vm(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(l.Dir, "vm.sh")}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("vm.sh %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// Prepare brings the image up to date and the network up. build-image.sh
// rebuilds only the stages whose inputs changed (under a second when none did),
// so an image older than the lab's package list or guest files is not
// booted.
func (l *Lab) Prepare(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(l.Dir, "build-image.sh"))
	cmd.Stdout, cmd.Stderr = l.Log, l.Log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build-image.sh: %w", err)
	}
	if out, err := l.vm(ctx, "net-up"); err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	return pinBridgeMAC(ctx, labNetns, labBridge)
}

// pinBridgeMAC sets the bridge's MAC to the one it has. A Linux bridge
// whose address was never set takes the lowest of its ports', so it
// changes whenever a row adds or removes rnic's TAP (a new random MAC);
// a guest that cached the bridge's old MAC then sends its side channel's
// SYNs to nobody, and the drop-in rows, whose programs listen on the
// bridge's address, fail. An address once set stays.
func pinBridgeMAC(ctx context.Context, netns, bridge string) error {
	mac, err := linkMAC(ctx, netns, bridge)
	if err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "ip", "-n", netns, "link", "set", bridge, "address", mac).CombinedOutput(); err != nil {
		return fmt.Errorf("pin %s's MAC: %w: %s", bridge, err, out)
	}
	return nil
}

// linkMAC is the MAC of link in netns.
func linkMAC(ctx context.Context, netns, link string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", "-n", netns, "-o", "link", "show", link).Output()
	if err != nil {
		return "", fmt.Errorf("ip link show %s: %w", link, err)
	}
	f := strings.Fields(string(out))
	i := slices.Index(f, "link/ether")
	if i < 0 || i+1 >= len(f) {
		return "", fmt.Errorf("no MAC for %s in %q", link, out)
	}
	return f[i+1], nil
}

// running lists the lab's running guests (vm.sh list).
func (l *Lab) running(ctx context.Context) (map[string]bool, error) {
	out, err := l.vm(ctx, "list")
	if err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			m[f[0]] = true
		}
	}
	return m, nil
}

// Boot starts the guests that are not running yet; those already running
// (left by --keep) are reused and left running.
func (l *Lab) Boot(ctx context.Context, gs []*Guest) error {
	up, err := l.running(ctx)
	if err != nil {
		return err
	}
	for _, g := range gs {
		if up[g.Name] {
			fmt.Fprintf(l.Log, "guest %s (%s, %s) already running: reusing it\n", g.Name, g.Kind, g.Addr)
			continue
		}
		fmt.Fprintf(l.Log, "booting guest %s (%s, %s)...\n", g.Name, g.Kind, g.Addr)
		// Recorded before it is up, so that an interrupted boot is stopped.
		l.booted = append(l.booted, g)
		out, err := l.vm(ctx, append([]string{"start", g.Name, g.Addr + "/24"}, g.Opts...)...)
		fmt.Fprint(l.Log, out)
		if err != nil {
			return err
		}
	}
	return nil
}

// StopBooted stops the guests Boot started. It runs at exit, also after
// an interrupt, so it takes its own context.
func (l *Lab) StopBooted() {
	for _, g := range l.booted {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if out, err := l.vm(ctx, "stop", g.Name); err != nil {
			fmt.Fprintf(l.Log, "stopping %s: %v\n%s", g.Name, err, out)
		} else {
			fmt.Fprintf(l.Log, "stopped guest %s\n", g.Name)
		}
		cancel()
	}
	l.booted = nil
}

// Exec runs cmd in guest g and returns its output and exit code.
func (l *Lab) Exec(ctx context.Context, g *Guest, timeout int, cmd string) (string, int) {
	out, err := l.vm(ctx, "exec", g.Name, "--timeout", fmt.Sprint(timeout), "--", cmd)
	return out, exitCode(err)
}

// Start starts cmd in g in the background and returns its id.
func (l *Lab) Start(ctx context.Context, g *Guest, cmd string) (string, error) {
	out, err := l.vm(ctx, "exec-bg", g.Name, "--", cmd)
	if err != nil {
		return "", fmt.Errorf("%w\n%s", err, out)
	}
	return strings.TrimSpace(out), nil
}

// Wait waits up to timeout seconds for a Start-ed command and returns its
// output and exit code (124: timeout, 126: guest gone, as vm.sh says).
func (l *Lab) Wait(ctx context.Context, g *Guest, id string, timeout int) (string, int) {
	out, err := l.vm(ctx, "wait", g.Name, id, fmt.Sprint(timeout))
	return out, exitCode(err)
}

// Kill stops a Start-ed command: SIGTERM to the children of the shell
// lab-agent runs it in (the timeout wrapping each command passes it on).
func (l *Lab) Kill(ctx context.Context, g *Guest, id string) {
	l.Exec(ctx, g, 20, fmt.Sprintf(`for p in $(pgrep -f "/lab/out/%s[.]sh"); do pkill -TERM -P "$p"; done; true`, id))
}

// WaitListen waits until something in g listens on TCP port, up to
// timeout seconds; it reports whether it saw it.
func (l *Lab) WaitListen(ctx context.Context, g *Guest, port, timeout int) bool {
	script := fmt.Sprintf(`for i in $(seq %d); do ss -Hltn "sport = :%d" | grep -q . && exit 0; sleep 0.1; done; exit 1`, timeout*10, port)
	_, rc := l.Exec(ctx, g, timeout+10, script)
	return rc == 0
}

// WaitCMListen waits until an rdma_cm id in g listens on port, up to
// timeout seconds (rdma_cm on rxe opens no socket that ss would show);
// it reports whether it saw it.
func (l *Lab) WaitCMListen(ctx context.Context, g *Guest, port, timeout int) bool {
	_, rc := l.Exec(ctx, g, timeout+10, cmListenScript(port, timeout))
	return rc == 0
}

// cmListenScript polls `rdma res show cm_id` for a LISTEN id on port.
func cmListenScript(port, timeout int) string {
	return fmt.Sprintf(`for i in $(seq %d); do rdma res show cm_id | grep -q "state LISTEN .*src-addr [^ ]*:%d " && exit 0; sleep 0.1; done; exit 1`, timeout*10, port)
}

// TAPExists reports whether the lab namespace has a link named tap.
func TAPExists(ctx context.Context, tap string) bool {
	return exec.CommandContext(ctx, "ip", "-n", labNetns, "link", "show", tap).Run() == nil
}

// DeleteTAP removes tap from the lab namespace if it is there (one rnic
// left behind after a crash).
func DeleteTAP(tap string) {
	if TAPExists(context.Background(), tap) {
		exec.Command("ip", "-n", labNetns, "link", "del", tap).Run()
	}
}

// exitCode is a command's exit status: 0 for success, its code if it
// exited, -1 if it could not run or was killed.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		return ee.ExitCode()
	}
	return -1
}
