// Network namespace plumbing for the TAP device: running one step on an OS
// thread that sits in another namespace, and opening that namespace by its
// `ip netns` name.

package tap

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// openNetns opens the namespace `ip netns` calls name (/run/netns/NAME).
// An empty name is the caller's own namespace: netns.None(), which netlink
// handles and inNetns take as "stay where you are".
func openNetns(name string) (netns.NsHandle, error) {
	if name == "" {
		return netns.None(), nil
	}
	ns, err := netns.GetFromName(name)
	if err != nil {
		return netns.None(), fmt.Errorf("tap: open network namespace %q: %w", name, err)
	}
	return ns, nil
}

// inNetns runs fn on an OS thread switched into ns and returns its error. A
// namespace belongs to a thread, not to the process, so the switch happens
// on a fresh goroutine locked to its thread: if switching back fails, that
// goroutine exits still locked and the Go runtime throws the tainted thread
// away instead of handing it to other goroutines. File descriptors fn opens
// keep the namespace they were opened in and work from any thread after.
// With ns not open (netns.None()), fn just runs here.
func inNetns(ns netns.NsHandle, fn func() error) error {
	if !ns.IsOpen() {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("get current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			// setns failed, so the thread never left: it is clean.
			runtime.UnlockOSThread()
			done <- fmt.Errorf("enter network namespace: %w", err)
			return
		}
		fnErr := fn()
		if err := netns.Set(orig); err != nil {
			// Stay locked: the thread dies with this goroutine.
			done <- errors.Join(fnErr, fmt.Errorf("return to the original network namespace: %w", err))
			return
		}
		runtime.UnlockOSThread()
		done <- fnErr
	}()
	return <-done
}
