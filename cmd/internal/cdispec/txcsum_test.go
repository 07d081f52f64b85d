package cdispec_test

// Turning off an interface's transmit checksum offload, as ethtool -K
// IF tx off does (the legacy ETHTOOL_STXCSUM command, which the kernel
// maps onto its feature flags), without needing ethtool installed.

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/tap/taptest"
)

// ethtoolSTXCSUM is ETHTOOL_STXCSUM of <linux/ethtool.h>.
const ethtoolSTXCSUM = 0x17

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct {
	cmd, data uint32
}

// ifreqData is struct ifreq with ifr_data set.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte // the rest of the union
}

// txChecksumOff turns ifname's transmit checksum offload off in the
// network namespace ns: the capture on the bridge then holds the
// checksums the sender computed, not ones left for a device to fill.
func txChecksumOff(ns, ifname string) error {
	var err error
	if nerr := taptest.InNetns(ns, func() { err = setTxChecksum(ifname, 0) }); nerr != nil {
		return nerr
	}
	return err
}

func setTxChecksum(ifname string, on uint32) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	v := ethtoolValue{cmd: ethtoolSTXCSUM, data: on}
	var ifr ifreqData
	copy(ifr.name[:], ifname)
	ifr.data = unsafe.Pointer(&v)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return fmt.Errorf("%s: ETHTOOL_STXCSUM: %w", ifname, errno)
	}
	return nil
}
