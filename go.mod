module github.com/rnic/rnic

go 1.26.3

require (
	github.com/gopacket/gopacket v1.7.7
	github.com/opencontainers/runtime-spec v1.3.0
	github.com/spf13/pflag v1.0.10
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	go.yaml.in/yaml/v3 v3.0.5
	golang.org/x/sys v0.49.0
	gvisor.dev/gvisor v0.0.0-20260905035102-160fafc42237
	tags.cncf.io/container-device-interface v1.1.2
	tags.cncf.io/container-device-interface/specs-go v1.1.1
)

require (
	github.com/fsnotify/fsnotify v1.7.0 // indirect
	github.com/google/btree v1.1.2 // indirect
	golang.org/x/exp v0.0.0-20250711185948-6ae5c78190dc // indirect
	golang.org/x/net v0.55.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)
