// The link state of the kernel's interfaces, which a NIC's port follows
// as rxe's port follows its net device: a TAP's own (tap), the interface
// under an embedded NIC's address (transport/udp).

package transport

import (
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// WatchLink calls changed with the link state, up or not (LinkUp), of each
// interface match picks, each time the kernel reports it changed, from a
// goroutine of its own; a report that changes nothing is passed on too.
// opts picks the namespace. Subscribing needs no privilege. stop ends the
// watch and returns once changed is no longer called.
func WatchLink(opts netlink.LinkSubscribeOptions, match func(*netlink.LinkAttrs) bool, changed func(up bool)) (stop func(), err error) {
	updates := make(chan netlink.LinkUpdate, 16)
	done, finished := make(chan struct{}), make(chan struct{})
	if err := netlink.LinkSubscribeWithOptions(updates, done, opts); err != nil {
		return nil, err
	}
	go func() {
		defer close(finished)
		for u := range updates {
			if a := u.Attrs(); a != nil && match(a) {
				changed(LinkUp(u.Flags))
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}, nil
}

// LinkUp reports whether interface flags say the link carries frames:
// administratively up and running (its carrier on).
func LinkUp(flags uint32) bool {
	return flags&unix.IFF_UP != 0 && flags&unix.IFF_RUNNING != 0
}
