// Entering a view: util-linux's nsenter, since setns into a user or mount
// namespace needs a single-threaded process, which no Go program is. A
// user other than root enters the user namespace first (where, as its
// creator's uid, it may enter the others) and keeps its credentials;
// exec then leaves it no capabilities, as a uid other than 0 there.

package view

import (
	"fmt"
	"os"
	"os/exec"
)

// JoinArgv returns the argv that runs args in the view of holder h, in
// directory wd (entering a mount namespace moves to its root), or args
// alone when this process is already in that view (rnic exec run inside
// rnic exec).
func JoinArgv(h *Holder, wd string, args []string) ([]string, error) {
	same := func(ns string) bool {
		a, err := os.Readlink("/proc/self/ns/" + ns)
		return err == nil && a == h.NS[ns]
	}
	if same("mnt") {
		return args, nil
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("%w: no nsenter to enter it (util-linux)", ErrUnavailable)
	}
	argv := []string{nsenter, fmt.Sprintf("--target=%d", h.PID)}
	if !same("user") {
		argv = append(argv, "--user", "--preserve-credentials")
	}
	argv = append(argv, "--mount")
	if !same("net") {
		argv = append(argv, "--net")
	}
	argv = append(argv, "--wd="+wd, "--")
	return append(argv, args...), nil
}
