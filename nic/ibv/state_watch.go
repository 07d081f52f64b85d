// Watching a QP's state: an optional interface of QP, for a daemon that
// mirrors the state where its client reads it.

package ibv

import "github.com/rnic/rnic/nic/verbs"

// StateWatcher is a QP that reports each state change made through
// Modify, by its owner or by a connection manager on its behalf.
type StateWatcher interface {
	// WatchState has f called with the QP's state after every Modify
	// that succeeds, before Modify returns, until the QP is destroyed
	// (never after Destroy returns). f must not call back into the QP.
	WatchState(f func(verbs.QPState))
}
