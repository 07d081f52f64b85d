package transport

// SourcePorts is implemented by links that keep resources per UDP source
// port: the embedded mode's link has one kernel socket for each source
// port frames leave from. An engine holds a port for as long as one of its
// QPs may send from it and releases it when the QP is destroyed, so that
// the link frees the socket; holds are counted (QPs may share a port).
// Frames from a port nobody holds still go out; the link then bounds what
// it keeps for such ports.
type SourcePorts interface {
	HoldSourcePort(port uint16)
	ReleaseSourcePort(port uint16)
}
