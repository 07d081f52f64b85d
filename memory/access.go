// Access flags of memory regions and windows, with the libibverbs bit values
// (IBV_ACCESS_*) so they cross the verbs API unchanged, and the validity rules
// ibv_reg_mr and ibv_bind_mw apply to them.

package memory

import (
	"fmt"
	"strings"
)

// Access is a set of access rights (libibverbs IBV_ACCESS_* values).
type Access uint32

// Access flags, with the libibverbs values.
const (
	LocalWrite   Access = 1 << 0 // IBV_ACCESS_LOCAL_WRITE
	RemoteWrite  Access = 1 << 1 // IBV_ACCESS_REMOTE_WRITE
	RemoteRead   Access = 1 << 2 // IBV_ACCESS_REMOTE_READ
	RemoteAtomic Access = 1 << 3 // IBV_ACCESS_REMOTE_ATOMIC
	MWBind       Access = 1 << 4 // IBV_ACCESS_MW_BIND
	ZeroBased    Access = 1 << 5 // IBV_ACCESS_ZERO_BASED
	// FlushGlobal and FlushPersistent let a peer's FLUSH (IBTA 1.5) ask
	// for global visibility or persistence of the memory's contents.
	FlushGlobal     Access = 1 << 8 // IBV_ACCESS_FLUSH_GLOBAL
	FlushPersistent Access = 1 << 9 // IBV_ACCESS_FLUSH_PERSISTENT
)

// flushAccess is the FLUSH placement rights.
const flushAccess = FlushGlobal | FlushPersistent

// regionAccess is every flag a memory region may carry.
const regionAccess = LocalWrite | RemoteWrite | RemoteRead | RemoteAtomic | MWBind | ZeroBased | flushAccess

// windowAccess is every flag a memory window bind may carry.
const windowAccess = RemoteWrite | RemoteRead | RemoteAtomic | ZeroBased

// remoteAccess is the flags that let a peer touch memory.
const remoteAccess = RemoteWrite | RemoteRead | RemoteAtomic

// Has reports whether a grants every right in need.
func (a Access) Has(need Access) bool { return need&^a == 0 }

// ValidateRegion checks a as the access of a memory region, as ibv_reg_mr
// does: unknown bits are refused, and so is remote write or remote atomic
// without local write (the NIC would write memory the owner declared
// read-only). The error wraps ErrInvalidAccess.
func (a Access) ValidateRegion() error {
	if a&^regionAccess != 0 {
		return fmt.Errorf("memory: access %v: unknown bits %#x: %w", a, uint32(a&^regionAccess), ErrInvalidAccess)
	}
	if a&(RemoteWrite|RemoteAtomic) != 0 && a&LocalWrite == 0 {
		return fmt.Errorf("memory: access %v: remote write or atomic needs LocalWrite: %w", a, ErrInvalidAccess)
	}
	return nil
}

// validateWindow checks a as the access of a memory window bind: only
// remote rights and ZeroBased are meaningful there.
func (a Access) validateWindow() error {
	if a&^windowAccess != 0 {
		return fmt.Errorf("memory: window access %v: only remote rights and ZeroBased allowed: %w", a, ErrInvalidAccess)
	}
	return nil
}

// accessNames names the flags by bit; bits 6 and 7 (on-demand paging,
// huge pages) are not rnic's.
var accessNames = [...]string{"LocalWrite", "RemoteWrite", "RemoteRead", "RemoteAtomic", "MWBind", "ZeroBased", "", "",
	"FlushGlobal", "FlushPersistent"}

// String returns the flags joined by '|', e.g. "LocalWrite|RemoteRead", or
// "0" for none; unknown bits are shown in hex.
func (a Access) String() string {
	if a == 0 {
		return "0"
	}
	var b strings.Builder
	for i, name := range accessNames {
		if name != "" && a&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(name)
		}
	}
	if rest := a &^ regionAccess; rest != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		fmt.Fprintf(&b, "%#x", uint32(rest))
	}
	return b.String()
}
