package bed

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// Listening ports for the bed's servers come from below the kernel's
// ephemeral range. A port that net.Listen(":0") handed out is an ephemeral
// one: closed again until the server binds it, any new outgoing connection
// on loopback (kube-apiserver opens one to etcd for each new CRD) can take
// it, and a controller that restarts until its CRDs exist then fails to
// bind it for good.
var ports struct {
	sync.Mutex
	given map[int]bool
}

// firstPort is the bottom of the range ports are picked from.
const firstPort = 20000

// freePort is a loopback TCP port outside the ephemeral range that nothing
// listens on and that this process has not handed out before. It comes from
// the share of the range that is this process's test-bed slot's
// (testhosts.SlotEnv): another test process, in another slot, checks and
// binds ports of its own, never one this process has just found free.
func freePort() (int, error) {
	slot, err := testhosts.Slot()
	if err != nil {
		return 0, err
	}
	first, last := slotPorts(firstPort, ephemeralStart()-1, slot, testhosts.Slots)
	ports.Lock()
	defer ports.Unlock()
	if ports.given == nil {
		ports.given = map[int]bool{}
	}
	for range 1000 {
		port := first + rand.IntN(last-first+1)
		if ports.given[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		ports.given[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free loopback port in %d-%d", first, last)
}

// slotPorts is slot's share, first to last, of the ports from first to last
// split among slots.
func slotPorts(first, last, slot, slots int) (int, int) {
	share := (last - first + 1) / slots
	return first + slot*share, first + (slot+1)*share - 1
}

// ephemeralStart is the first port of net.ipv4.ip_local_port_range (32768
// when it cannot be read, the kernel's default).
func ephemeralStart() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n <= firstPort+1000 {
		return 32768
	}
	return n
}
