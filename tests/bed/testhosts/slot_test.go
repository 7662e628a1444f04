package testhosts

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlotted(t *testing.T) {
	tests := []struct {
		name, subnet string
		slot         int
		wantName     string
		wantSubnet   string
		wantErr      string
	}{
		{name: "k3sfa", subnet: "10.213.8", slot: 0, wantName: "k3sfa", wantSubnet: "10.213.8"},
		{name: "k3sfa", subnet: "10.213.8", slot: 1, wantName: "k3sfa1", wantSubnet: "10.213.58"},
		{name: "k3sr3", subnet: "10.213.31", slot: 2, wantName: "k3sr32", wantSubnet: "10.213.131"},
		{name: "k3sr3", subnet: "10.213.31", slot: 4, wantName: "k3sr34", wantSubnet: "10.213.231"},
		{name: "k3sfa", subnet: "10.213.50", slot: 0, wantErr: "the third under 50"},
		{name: "k3sfa", subnet: "10.213.160", slot: 1, wantErr: "the third under 50"},
		{name: "k3sfa", subnet: "10213", slot: 1, wantErr: "expected three octets"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.subnet, func(t *testing.T) {
			name, subnet, err := slotted(tt.name, tt.subnet, tt.slot)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantName, name)
			assert.Equal(t, tt.wantSubnet, subnet)
		})
	}
}

func TestSlot(t *testing.T) {
	for raw, want := range map[string]int{"": 0, "0": 0, "1": 1, " 2 ": 2} {
		t.Setenv(SlotEnv, raw)
		got, err := Slot()
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
	for _, raw := range []string{"5", "-1", "one"} {
		t.Setenv(SlotEnv, raw)
		_, err := Slot()
		assert.ErrorContains(t, err, "expected a number from 0 to 4", raw)
	}
}

func TestSlottedName(t *testing.T) {
	for raw, want := range map[string]string{"": "k3sfu", "2": "k3sfu2"} {
		t.Setenv(SlotEnv, raw)
		got, err := SlottedName("k3sfu")
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
	t.Setenv(SlotEnv, "9")
	_, err := SlottedName("k3sfu")
	assert.ErrorContains(t, err, "expected a number from 0 to 4")
}
