package k3sflags

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTable(t *testing.T) {
	require.Len(t, All, 173-48, "every flag row of k3s-flags.tsv is read")
	assert.Equal(t, Flag{Name: "node-ip", Type: StringSlice, Server: true, Agent: true, Alias: "i", SplitsCommas: true}, All["node-ip"])
	assert.Equal(t, Flag{Name: "disable-apiserver-lb", Type: Bool, Agent: true}, All["disable-apiserver-lb"])
	assert.Equal(t, "t", All["token"].Alias)
	assert.False(t, All["node-label"].SplitsCommas)
}

func TestForRole(t *testing.T) {
	f, ok := ForRole("agent", "i")
	assert.True(t, ok)
	assert.Equal(t, "node-ip", f.Name)
	_, ok = ForRole("agent", "tls-san")
	assert.False(t, ok, "server-only flag")
	_, ok = ForRole("server", "disable-apiserver-lb")
	assert.False(t, ok, "agent-only flag")
	_, ok = ForRole("server", "no-such-flag")
	assert.False(t, ok)
}

func TestParseErrors(t *testing.T) {
	_, err := Parse("x\tbool\tsomewhere\tno\tnote\n")
	assert.ErrorContains(t, err, "unknown applies_to")
	_, err = Parse("x\tfloat\tboth\tno\tnote\n")
	assert.ErrorContains(t, err, "unknown type")
	_, err = Parse("x\tbool\n")
	assert.ErrorContains(t, err, "want 5 columns")
}
