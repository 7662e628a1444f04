package k3sconfig

import "github.com/gitops-k3s-flux/k3s_flux/internal/k3sflags"

// k3sFlags are the k3s flags config.yaml may hold.
var k3sFlags = k3sflags.All

// removedFlags are flags older k3s releases took and current ones reject,
// with what to write instead.
var removedFlags = map[string]string{
	"cluster-secret":  "token (the module option)",
	"no-deploy":       "disable",
	"no-flannel":      "flannel-backend: none",
	"disable-selinux": "selinux: false",
}

// secretKeys hold credentials: their values are redacted in diffs and
// masked in the result like a no_log option.
var secretKeys = map[string]bool{
	"token":                 true,
	"agent-token":           true,
	"etcd-s3-access-key":    true,
	"etcd-s3-secret-key":    true,
	"etcd-s3-session-token": true,
	"datastore-endpoint":    true,
	"vpn-auth":              true,
}

// nearest returns the candidate closest to key by edit distance, if close
// enough to be a plausible misspelling.
func nearest(key string, candidates []string) string {
	best, bestDist := "", len(key)/2+2
	for _, c := range candidates {
		if d := editDistance(key, c); d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
