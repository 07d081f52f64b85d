// Events of ops defined in other files: a concern that adds event ops
// (rdma_cm, the side channel) registers a handler for them here.

package client

import (
	"fmt"
	"sync"

	"github.com/rnic/rnic/nic/rnicd/proto"
)

var eventHandlers = struct {
	sync.RWMutex
	m map[proto.Op]func(d *Device, body []byte)
}{m: map[proto.Op]func(*Device, []byte){}}

// registerEvent makes f handle events of op (from an init func). f runs on
// the goroutine that read the event, a caller's or the background
// reader's (leader.go): it must not block, nor make calls, nor take a lock
// a caller holds over a call (d.arena.mu).
func registerEvent(op proto.Op, f func(d *Device, body []byte)) {
	eventHandlers.Lock()
	defer eventHandlers.Unlock()
	if _, ok := eventHandlers.m[op]; ok {
		panic(fmt.Sprintf("rnicd client: event %v registered twice", op))
	}
	eventHandlers.m[op] = f
}

func eventHandler(op proto.Op) func(*Device, []byte) {
	eventHandlers.RLock()
	defer eventHandlers.RUnlock()
	return eventHandlers.m[op]
}
