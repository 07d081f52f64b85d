// Package deviceplugin is a kubelet device plugin (API v1beta1) for the
// NICs of a node's rnicd: it registers one extended resource with the
// kubelet, lists the NICs with their health (ListAndWatch) and tells the
// kubelet what a container given some of them needs (Allocate): their
// CDI device names, and for a kubelet or runtime without CDI the same
// mounts and environment directly.
//
// The package knows neither rnicd's protocol nor the CDI spec: an
// Inventory says which NICs there are and whether each is healthy, a
// Provider what a container needs to use them. The command (rnic k8s
// device-plugin) supplies both.
//
// The kubelet side: the plugin serves DevicePlugin on a socket of its own
// in the kubelet's device-plugin directory and registers that socket's
// name with the kubelet's Registration service. A kubelet that restarts
// removes the plugins' sockets and makes its own anew; the plugin sees
// either, serves again and registers again.
package deviceplugin
