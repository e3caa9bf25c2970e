package compose_test

import (
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/compose"
)

// AGENTPLANE_STORE_CACHE_MB sizes the local store's read cache; 0 turns
// it off (a negative Config value), and anything else but a whole number
// of MiB is refused by name.
func TestStoreCacheConfig(t *testing.T) {
	for raw, want := range map[string]int{"": compose.DefaultStoreCacheMB, "64": 64, "0": -1} {
		clearEnv(t)
		t.Setenv("AGENTPLANE_STORE_CACHE_MB", raw)
		c, err := compose.ConfigFromEnv()
		if err != nil || c.StoreCacheMB != want {
			t.Errorf("%q: %d %v, want %d", raw, c.StoreCacheMB, err, want)
		}
	}
	for _, raw := range []string{"-1", "32MB", "1.5", "99999999"} {
		clearEnv(t)
		t.Setenv("AGENTPLANE_STORE_CACHE_MB", raw)
		if _, err := compose.ConfigFromEnv(); err == nil || !strings.Contains(err.Error(), "AGENTPLANE_STORE_CACHE_MB") {
			t.Errorf("%q: %v, want an error naming the variable", raw, err)
		}
	}
}
