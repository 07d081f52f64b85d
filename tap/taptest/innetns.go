package taptest

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// InNetns runs fn on an OS thread inside the namespace ns (ip netns name):
// sockets and TAPs fn opens, and processes it starts, live there. The
// thread returns to its namespace after, even if fn ends its goroutine
// (t.Fatal). It must: a thread that ended locked would be destroyed, and
// with it the death signal (Pdeathsig) of every child it ever started,
// before fn too, would fire. Only if going back fails is it left locked,
// and so destroyed.
func InNetns(ns string, fn func()) error {
	done := make(chan error, 1)
	go func() {
		var err error
		runtime.LockOSThread()
		orig, gerr := netns.Get()
		if gerr != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("current network namespace: %w", gerr)
			return
		}
		defer orig.Close()
		defer func() {
			if rerr := netns.Set(orig); rerr != nil {
				done <- fmt.Errorf("return from %s: %w", ns, rerr) // the thread dies locked
				return
			}
			runtime.UnlockOSThread()
			done <- err
		}()
		h, err := netns.GetFromName(ns)
		if err != nil {
			err = fmt.Errorf("network namespace %s: %w", ns, err)
			return
		}
		defer h.Close()
		if err = netns.Set(h); err != nil {
			err = fmt.Errorf("enter %s: %w", ns, err)
			return
		}
		fn()
	}()
	return <-done
}
