package poll

import (
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// watched are the sockets of the process's readers (Watch), which a
// poller looks at while it holds its P (see the package comment). version
// changes with every Watch and stop, so a poller rebuilds its set only
// then.
var watched struct {
	mu      sync.Mutex
	pollers []*Poller
	version atomic.Uint64
}

// Watch makes fd the poller's socket and lists it among the sockets the
// process's other pollers look at while they poll, until stop. A socket
// closed before its stop costs nothing worse than an early park: poll(2)
// reports POLLNVAL for it, or, if its number was reused meanwhile, perhaps
// a readable file.
func (p *Poller) Watch(fd int) (stop func()) {
	watched.mu.Lock()
	p.fd = int32(fd)
	watched.pollers = append(watched.pollers, p)
	watched.version.Add(1)
	watched.mu.Unlock()
	return func() {
		watched.mu.Lock()
		watched.pollers = slices.DeleteFunc(watched.pollers, func(o *Poller) bool { return o == p })
		watched.version.Add(1)
		watched.mu.Unlock()
	}
}

// othersWaiting says whether another watched socket, whose reader does
// not poll now (so it is parked, or about to), holds a datagram.
func (p *Poller) othersWaiting() bool {
	if v := watched.version.Load(); v != p.othersOf {
		p.rebuild(v)
	}
	if len(p.pfds) == 0 {
		return false
	}
	if n, err := unix.Poll(p.pfds, 0); err != nil || n == 0 {
		return false
	}
	for i, f := range p.pfds {
		// A reader that polls reads its socket itself; POLLNVAL (a
		// socket closed before its stop) is no datagram.
		if f.Revents&unix.POLLIN != 0 && !p.others[i].held.Load() {
			return true
		}
	}
	return false
}

// rebuild takes the watched sockets other than p's own, as of version v.
func (p *Poller) rebuild(v uint64) {
	watched.mu.Lock()
	defer watched.mu.Unlock()
	p.others, p.pfds = p.others[:0], p.pfds[:0]
	for _, o := range watched.pollers {
		if o != p {
			p.others = append(p.others, o)
			p.pfds = append(p.pfds, unix.PollFd{Fd: o.fd, Events: unix.POLLIN})
		}
	}
	p.othersOf = v
}
