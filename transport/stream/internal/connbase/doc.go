// Package connbase is the machinery kernel TCP (kerneltcp) and netstack
// share to turn a blocking socket-like endpoint into the event-driven
// stream.Conn: the bounded send queue with its refusal and writable
// signal, the serialised callbacks, the bookkeeping of an orderly close,
// the accept loop's start and end, and the asynchronous Dial.
//
// It is internal to transport/stream because its exported fields are the
// embedding connection's state, guarded by its lock, and no one else's to
// touch; it is a package of its own so that neither implementation has to
// link the other (netstack links gVisor, kerneltcp does not).
package connbase
