package testhosts

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SlotEnv gives a test process its slot, so that several of them can run
// their test beds at once: make test-e2e runs the two ansible-core passes
// side by side (slots 0 and 1), and make test runs molecule (slot 2) and
// the integration tier (slot 3) beside them; slot 4 is free for more. Slot N > 0 appends
// N to every bed's name (its namespaces, interfaces) and moves its subnet's
// third octet up by SlotStep×N; the bed's loopback ports come from the
// slot's own share of the range (bed.freePort). Unset or 0: the names and
// subnets the tests give.
const SlotEnv = "K3SF_BED_SLOT"

// Slots is how many test processes can run beds at once.
const Slots = 5

// SlotStep is how far each slot moves a subnet's third octet: the tests'
// own subnets keep theirs under SlotStep, so that no two slots share one.
const SlotStep = 50

// Slot is this process's slot, from SlotEnv (0 when unset).
func Slot() (int, error) {
	raw := strings.TrimSpace(os.Getenv(SlotEnv))
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 || n >= Slots {
		return 0, fmt.Errorf("%s=%q: expected a number from 0 to %d", SlotEnv, raw, Slots-1)
	}
	return n, nil
}

// SlottedName is the name a bed called name has in this process's slot
// (what Down needs of a bed another process brought up).
func SlottedName(name string) (string, error) {
	slot, err := Slot()
	if err != nil {
		return "", err
	}
	name, _, err = slotted(name, DefaultSubnet, slot)
	return name, err
}

// slotted is a bed's name and subnet in slot n.
// A subnet whose third octet is SlotStep or more is refused in every slot: it
// would be another slot's.
func slotted(name, subnet string, n int) (string, string, error) {
	prefix, third, ok := cutLast(subnet, ".")
	octet, err := strconv.Atoi(third)
	if !ok || err != nil || octet >= SlotStep {
		return "", "", fmt.Errorf("test bed subnet %q cannot move up by %d in slot %d (%s): expected three octets, the third under %d", subnet, SlotStep*n, n, SlotEnv, SlotStep)
	}
	if n == 0 {
		return name, subnet, nil
	}
	return name + strconv.Itoa(n), prefix + "." + strconv.Itoa(octet+SlotStep*n), nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
