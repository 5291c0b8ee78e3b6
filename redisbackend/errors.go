package redisbackend

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// IsPermanent reports whether err is a Redis error reply that repeating
// the command gives again: WRONGTYPE (a key under the backend's prefix
// holds another kind of value), ERR (a syntax error, an unknown command,
// an error raised in a script), NOAUTH, WRONGPASS and NOPERM (credentials
// and ACLs), EXECABORT. Replies that a retry may get past are transient:
// LOADING, BUSY, TRYAGAIN, CLUSTERDOWN, READONLY and MASTERDOWN (a
// restart or failover), OOM (memory may be freed), NOREPLICAS, NOSCRIPT
// (go-redis loads the script again), "ERR max number of clients reached",
// and every error that is not a reply (the network, a context). The
// backend marks the errors it matches with anarchon.Permanent.
func IsPermanent(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	kind, _, _ := strings.Cut(msg, " ")
	switch kind {
	case "WRONGTYPE", "NOAUTH", "WRONGPASS", "NOPERM", "EXECABORT":
		return true
	case "ERR":
		return !strings.HasPrefix(msg, "ERR max number of clients")
	}
	return false
}
