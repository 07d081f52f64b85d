// Errors that exist with and without the verbs build tag.

package passthrough

import "errors"

// ErrNotBuilt is what opening a verbs: device returns in a program built
// without the verbs tag.
var ErrNotBuilt = errors.New("rnic was built without the verbs tag: rebuild with -tags verbs and libibverbs-dev")
