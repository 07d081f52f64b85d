package deviceplugin

// Provider says what a container needs to use some NICs: the seam between
// the plugin and whatever describes rnic's devices to container runtimes.
type Provider interface {
	// CDIDevices returns the fully qualified CDI names of the NICs
	// (vendor/class=name), in their order.
	CDIDevices(nics []string) ([]string, error)
	// Edits returns what a runtime without CDI must be told directly for
	// a container to use the NICs.
	Edits(nics []string) (Edits, error)
}

// Edits are the changes to a container that give it NICs.
type Edits struct {
	Env     map[string]string
	Mounts  []Mount
	Devices []DeviceNode
}

// Mount bind-mounts a host path into the container.
type Mount struct {
	HostPath, ContainerPath string
	ReadOnly                bool
}

// DeviceNode is a device node of the host the container gets.
type DeviceNode struct {
	HostPath, ContainerPath string
	// Permissions are the cgroup's: any of "r", "w", "m".
	Permissions string
}
