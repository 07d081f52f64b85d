package deviceplugin

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// NIC is one of the node's NICs as the plugin lists it.
type NIC struct {
	Name    string
	Healthy bool
}

// Inventory lists the node's NICs. An error says the daemon did not
// answer: every NIC listed before is then unhealthy (not gone: the
// kubelet keeps a pod's unhealthy device allocated, and the daemon may
// come back).
type Inventory func(ctx context.Context) ([]NIC, error)

// nicSet is the NICs last seen, and a channel closed when they change.
type nicSet struct {
	mu      sync.Mutex
	nics    []NIC
	changed chan struct{}
}

func newNICSet() *nicSet { return &nicSet{changed: make(chan struct{})} }

// snapshot returns the NICs and the channel that is closed when they
// next change.
func (s *nicSet) snapshot() ([]NIC, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.nics), s.changed
}

// has reports whether name is a NIC listed now.
func (s *nicSet) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.nics, func(n NIC) bool { return n.Name == name })
}

// update takes what the inventory said and wakes the watchers if the
// list or a NIC's health changed.
func (s *nicSet) update(nics []NIC, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := slices.Clone(nics)
	if err != nil {
		next = slices.Clone(s.nics)
		for i := range next {
			next[i].Healthy = false
		}
	}
	slices.SortFunc(next, func(a, b NIC) int { return strings.Compare(a.Name, b.Name) })
	if slices.Equal(next, s.nics) {
		return
	}
	s.nics = next
	close(s.changed)
	s.changed = make(chan struct{})
}

// inventoryTimeout bounds one look at the daemon: a wedged daemon is an
// unhealthy one, not a plugin that stops answering the kubelet.
const inventoryTimeout = 5 * time.Second

// poll asks the inventory every interval until ctx ends.
func (s *nicSet) poll(ctx context.Context, inv Inventory, every time.Duration, logf func(string, ...any)) {
	lastErr, first := "", true
	for {
		c, cancel := context.WithTimeout(ctx, inventoryTimeout)
		nics, err := inv(c)
		cancel()
		if ctx.Err() != nil {
			return
		}
		// Say when the daemon goes away or comes back, not every poll.
		if msg := errText(err); first || msg != lastErr {
			if err != nil {
				logf("rnicd does not answer: every NIC unhealthy: %v", err)
			} else {
				logf("rnicd answers: %d NICs", len(nics))
			}
			lastErr, first = msg, false
		}
		s.update(nics, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
