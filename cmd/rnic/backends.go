// The device backends rnic's tools can open by device string besides the
// in-process NIC: a NIC of an rnicd daemon (NAME@SOCKET) and libibverbs
// devices (verbs:NAME, with -tags verbs; without it the string fails with
// a rebuild hint). Each registers itself with ibv.Register when linked.

package main

import (
	_ "github.com/rnic/rnic/nic/passthrough"
	_ "github.com/rnic/rnic/nic/rnicd/client"
)
