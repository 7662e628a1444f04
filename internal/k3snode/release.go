package k3snode

import (
	"cmp"
	"math"
	"strconv"
	"strings"
)

// Release is a parsed k3s release name: v<major>.<minor>.<patch>[-rc<n>]+k3s<build>.
type Release struct {
	Major, Minor, Patch int
	RC                  int // math.MaxInt for a final release: every rc comes before it
	Build               int
}

// ParseRelease parses a k3s release name; ok is false for anything else.
func ParseRelease(s string) (r Release, ok bool) {
	core, build, found := strings.Cut(s, "+k3s")
	if !found || !strings.HasPrefix(core, "v") {
		return r, false
	}
	if r.Build, ok = number(build); !ok {
		return r, false
	}
	core, rc, hasRC := strings.Cut(core[1:], "-rc")
	r.RC = math.MaxInt
	if hasRC {
		if r.RC, ok = number(rc); !ok {
			return r, false
		}
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return r, false
	}
	for i, p := range []*int{&r.Major, &r.Minor, &r.Patch} {
		if *p, ok = number(parts[i]); !ok {
			return r, false
		}
	}
	return r, true
}

// number parses digits only (no sign, no spaces).
func number(s string) (int, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// Compare orders two releases: negative when r comes first.
func (r Release) Compare(o Release) int {
	return cmp.Or(cmp.Compare(r.Major, o.Major), cmp.Compare(r.Minor, o.Minor), cmp.Compare(r.Patch, o.Patch),
		cmp.Compare(r.RC, o.RC), cmp.Compare(r.Build, o.Build))
}

// Newer reports whether release a is later than release b; false when
// either does not parse, so an unknown version is never taken for newer.
func Newer(a, b string) bool {
	ra, okA := ParseRelease(a)
	rb, okB := ParseRelease(b)
	return okA && okB && ra.Compare(rb) > 0
}
