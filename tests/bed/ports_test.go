package bed

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSlotPorts(t *testing.T) {
	tests := []struct {
		slot, slots int
		first, last int
	}{
		{slot: 0, slots: 1, first: 20000, last: 32767},
		{slot: 0, slots: 3, first: 20000, last: 24255},
		{slot: 1, slots: 3, first: 24256, last: 28511},
		{slot: 2, slots: 3, first: 28512, last: 32767},
	}
	for _, tt := range tests {
		first, last := slotPorts(20000, 32767, tt.slot, tt.slots)
		assert.Equal(t, []int{tt.first, tt.last}, []int{first, last}, "slot %d of %d", tt.slot, tt.slots)
	}
}
