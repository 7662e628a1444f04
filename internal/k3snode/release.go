package k3snode

import (
	"cmp"
	"math"
	"strconv"
	"strings"
)

// Release is a parsed k3s release name: v<major>.<minor>.<patch>[-rc<n>]+k3s<build>,
// or a dev build's v<major>.<minor>.<patch>[-rc<n>]+k3s-<commit>[-dirty]
// (k3s's scripts/version.sh names an untagged build after its commit).
type Release struct {
	Major, Minor, Patch int
	RC                  int // math.MaxInt for a final release: every rc comes before it
	Build               int
	// Commit is a dev build's (Build is then 0): it has no place among the
	// releases of its Kubernetes version.
	Commit string
}

// Dev tells a dev build, which install.sh installs by commit
// (INSTALL_K3S_COMMIT), not by version.
func (r Release) Dev() bool { return r.Commit != "" }

// ParseRelease parses a k3s release name; ok is false for anything else.
func ParseRelease(s string) (r Release, ok bool) {
	core, build, found := strings.Cut(s, "+k3s")
	if !found || !strings.HasPrefix(core, "v") {
		return r, false
	}
	if commit, isDev := strings.CutPrefix(build, "-"); isDev {
		commit = strings.TrimSuffix(commit, "-dirty")
		if len(commit) < 7 || strings.Trim(commit, "0123456789abcdef") != "" {
			return r, false
		}
		r.Commit = commit
	} else if r.Build, ok = number(build); !ok {
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

// Compare orders two releases: negative when r comes first. A dev build
// is ordered by its Kubernetes version only: 0 against any build of the
// same version, so it is never taken for newer nor older than one.
func (r Release) Compare(o Release) int {
	core := cmp.Or(cmp.Compare(r.Major, o.Major), cmp.Compare(r.Minor, o.Minor), cmp.Compare(r.Patch, o.Patch), cmp.Compare(r.RC, o.RC))
	if core != 0 || r.Dev() || o.Dev() {
		return core
	}
	return cmp.Compare(r.Build, o.Build)
}

// Newer reports whether release a is later than release b; false when
// either does not parse, so an unknown version is never taken for newer.
func Newer(a, b string) bool {
	ra, okA := ParseRelease(a)
	rb, okB := ParseRelease(b)
	return okA && okB && ra.Compare(rb) > 0
}
