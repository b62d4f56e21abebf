package mlx5

import (
	"fmt"
	"strings"

	"github.com/daqiri-go/daqiri/engine"
)

// regionUsers are the queues of the whole configuration (every interface, RX and TX, any
// engine) that name region r, as key paths for errors. A striding RQ takes every buffer of
// its region at open and posts them as its WQEs, so it can serve only a region nobody else
// draws from; a region named by several queues is shared the way upstream's DPDK engine
// shares a mempool among the queues that name it: each of its RX queues gets a cyclic RQ
// whose WQEs take one buffer at a time from the region's pool and return it when the
// application frees the packet (see sharedRing).
func (pt *port) regionUsers(r *engine.Region) []string {
	var users []string
	for i, ifc := range pt.e.env.Config.Interfaces {
		if ifc.RX != nil {
			for j, q := range ifc.RX.Queues {
				for _, m := range q.MemoryRegions {
					if m == r.Name {
						users = append(users, fmt.Sprintf("interfaces[%d].rx.queues[%d]", i, j))
					}
				}
			}
		}
		if ifc.TX != nil {
			for j, q := range ifc.TX.Queues {
				for _, m := range q.MemoryRegions {
					if m == r.Name {
						users = append(users, fmt.Sprintf("interfaces[%d].tx.queues[%d]", i, j))
					}
				}
			}
		}
	}
	return users
}

// rxSharers is how many RX queues draw from region r (at least 1).
func rxSharers(users []string) int {
	n := 0
	for _, u := range users {
		if strings.Contains(u, ".rx.") {
			n++
		}
	}
	return max(n, 1)
}

// sharedRing is the part of a region of n buffers that one of sharers RX queues sizes its
// cyclic RQ by (the ring then posts half of it, as for a region of its own): the queues'
// rings together post at most half the pool, leaving the rest for packets the application
// holds and for refills, where each sizing by the whole pool would leave a third sharer an
// empty ring at start.
func sharedRing(n, sharers int) int {
	return max(1, n/sharers)
}
