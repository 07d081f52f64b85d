module github.com/rnic/rnic

go 1.26.0

require (
	github.com/gopacket/gopacket v1.7.7
	github.com/spf13/pflag v1.0.10
	golang.org/x/sys v0.49.0
)

require golang.org/x/net v0.55.0 // indirect
