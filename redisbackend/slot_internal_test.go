package redisbackend

import "testing"

// TestKeySlot checks keySlot on the values the Redis Cluster
// specification gives: CRC16 XMODEM's check value ("123456789" is
// 0x31C3), the slot of "foo", and its hash tag examples, where a key with
// a tag lands on the slot of the tag alone. TestCluster compares keySlot
// with the server's CLUSTER KEYSLOT.
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{
		"123456789":            0x31C3,
		"foo":                  12182,
		"{user1000}.following": keySlot("user1000"),
		"foo{{bar}}zap":        keySlot("{bar"),
		"foo{bar}{zap}":        keySlot("bar"),
	} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if keySlot("foo{}{bar}") == keySlot("bar") {
		t.Error(`keySlot("foo{}{bar}") took "bar" as its tag; an empty first tag means no tag`)
	}
}
