package k3snode

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseRelease(t *testing.T) {
	for _, s := range []string{"v1.36.2+k3s1", "v1.36.2-rc1+k3s2", "v0.0.0+k3s0", "v1.36.2+k3s-1a2b3c4d", "v1.36.2+k3s-1a2b3c4d-dirty", "v1.36.2-rc1+k3s-1a2b3c4d"} {
		_, ok := ParseRelease(s)
		assert.True(t, ok, s)
	}
	for _, s := range []string{"", "1.36.2+k3s1", "v1.36+k3s1", "v1.36.2", "v1.36.2+k3s", "v1.36.2+k3s1a", "v1.36.x+k3s1", "v1.36.2-rc+k3s1", "v1.36.2-beta1+k3s1", "v1.-3.2+k3s1", "v1.36.2+k3s+1", "v1.36.2+k3s-", "v1.36.2+k3s-xyz1234", "v1.36.2+k3s-1a2b"} {
		_, ok := ParseRelease(s)
		assert.False(t, ok, s)
	}
}

func TestNewer(t *testing.T) {
	for _, c := range []struct {
		a, b  string
		newer bool
	}{
		{"v1.36.2+k3s1", "v1.36.2+k3s1", false},
		{"v1.36.2+k3s2", "v1.36.2+k3s1", true},
		{"v1.36.2+k3s10", "v1.36.2+k3s9", true}, // numbers, not strings
		{"v1.36.10+k3s1", "v1.36.9+k3s1", true},
		{"v1.37.0+k3s1", "v1.36.9+k3s3", true},
		{"v2.0.0+k3s1", "v1.99.99+k3s9", true},
		{"v1.36.2+k3s1", "v1.36.2-rc3+k3s1", true}, // the release comes after its candidates
		{"v1.36.2-rc2+k3s1", "v1.36.2-rc1+k3s1", true},
		{"v1.35.4+k3s1", "v1.36.2+k3s1", false},
		{"garbage", "v1.36.2+k3s1", false},
		{"v1.36.2+k3s1", "garbage", false},
		// A dev build (k3s's scripts/version.sh: +k3s-<commit>) is ordered by its Kubernetes version only.
		{"v1.37.0+k3s-1a2b3c4d", "v1.36.2+k3s1", true},
		{"v1.36.2+k3s1", "v1.35.0+k3s-1a2b3c4d-dirty", true},
		{"v1.36.2+k3s-1a2b3c4d", "v1.36.2+k3s1", false},
		{"v1.36.2+k3s1", "v1.36.2+k3s-1a2b3c4d", false},
	} {
		assert.Equal(t, c.newer, Newer(c.a, c.b), "%s > %s", c.a, c.b)
	}
}
