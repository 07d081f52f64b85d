package ladder

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	iwdecode "github.com/rnic/rnic/iwarp/decode"
)

// other labels a frame that is not RoCEv2: a TCP segment (which may later
// turn out to have completed an FPDU or MPA frame), or another frame named
// by its EtherType. Its ends are IP addresses, or MAC addresses without IP.
func other(ev *Event, data []byte) {
	ev.Class = ClassTCP
	pkt := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
	var line []byte
	line = append(line, '#')
	line = strconv.AppendInt(line, int64(ev.Frame), 10)
	line = append(line, ' ')
	line = iwdecode.AppendSeconds(line, ev.Time)
	line = append(line, ' ')
	if eth, ok := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet); ok && ev.SrcHost == "" {
		ev.SrcHost, ev.DstHost = eth.SrcMAC.String(), eth.DstMAC.String()
		ev.Label = eth.EthernetType.String()
		line = append(line, ev.SrcHost+" > "+ev.DstHost+" "+ev.Label...)
		ev.Decode = string(line)
		return
	}
	tcp, ok := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
	if !ok {
		ev.Label = "IP"
		if nl := pkt.NetworkLayer(); nl != nil {
			if l := pkt.TransportLayer(); l != nil {
				ev.Label = l.LayerType().String()
			}
		}
		line = append(line, ev.SrcHost+" > "+ev.DstHost+" "+ev.Label...)
		ev.Decode = string(line)
		return
	}
	ev.Src = netip.AddrPortFrom(ev.Src.Addr(), uint16(tcp.SrcPort))
	ev.Dst = netip.AddrPortFrom(ev.Dst.Addr(), uint16(tcp.DstPort))
	ev.Label = "TCP " + tcpFlags(tcp)
	ev.Sub = "seq=" + strconv.FormatUint(uint64(tcp.Seq), 10) + " ack=" + strconv.FormatUint(uint64(tcp.Ack), 10) +
		" len=" + strconv.Itoa(len(tcp.Payload))
	line = ev.Src.AppendTo(line)
	line = append(line, " > "...)
	line = ev.Dst.AppendTo(line)
	ev.Decode = string(line) + " " + ev.Label + " " + ev.Sub
}

func tcpFlags(t *layers.TCP) string {
	var f []string
	for _, x := range [...]struct {
		on   bool
		name string
	}{{t.SYN, "SYN"}, {t.FIN, "FIN"}, {t.RST, "RST"}, {t.PSH, "PSH"}, {t.ACK, "ACK"}} {
		if x.on {
			f = append(f, x.name)
		}
	}
	return "[" + strings.Join(f, ",") + "]"
}
