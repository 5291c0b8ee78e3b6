package redisbackend

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The URL forms of [Open], beyond what go-redis parses itself: a host
// list ("h1:p1,h2:p2,h3"), a Sentinel scheme and the backend's own query
// parameters. go-redis reads the rest (user, password, database, client
// options such as dial_timeout) and refuses parameters it does not know.

// URL query parameters the backend reads itself; they are removed before
// go-redis parses the URL.
const (
	paramCluster          = "cluster"           // "true": a Redis Cluster client on the host list
	paramMaster           = "master"            // the Sentinel master name (redis+sentinel only)
	paramWait             = "wait"              // Options.Replicas
	paramWaitTimeout      = "wait_timeout"      // Options.ReplicaTimeout, a Go duration ("500ms")
	paramPrefix           = "prefix"            // Options.Prefix
	paramSentinelUser     = "sentinel_username" // the Sentinels' own user (redis+sentinel only)
	paramSentinelPassword = "sentinel_password" // the Sentinels' own password (redis+sentinel only)
)

// parsedURL is a store URL taken apart: the client to build and the
// options the URL sets.
type parsedURL struct {
	single   *redis.Options         // one server
	failover *redis.FailoverOptions // Sentinel
	cluster  *redis.ClusterOptions  // Redis Cluster
	replicas *int
	timeout  *time.Duration
	prefix   *string
}

// urlError is an ErrInvalidInput for the URL raw, shown redacted.
func urlError(raw, format string, args ...any) error {
	return fmt.Errorf("%w: redis URL %s: %s", ErrInvalidInput, redactURL(raw), fmt.Sprintf(format, args...))
}

// redactURL replaces the userinfo of raw (everything between "://" and the
// last '@' of the authority) with "xxxxx", keeping a user name that a
// password follows. It works on text that does not parse as a URL (a host
// list does not). Without "://" everything up to the last '@' is
// replaced: a bare "host:port", the commonest slip, shows as it was
// given.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		if at := strings.LastIndexByte(raw, '@'); at >= 0 {
			return "xxxxx" + redactQueryText(raw[at:])
		}
		return redactQueryText(raw)
	}
	auth, tail := splitAuthority(rest)
	at := strings.LastIndexByte(auth, '@')
	if at < 0 {
		return scheme + "://" + auth + redactQueryText(tail)
	}
	user, _, hasPass := strings.Cut(auth[:at], ":")
	info := "xxxxx"
	if hasPass && user != "" {
		info = user + ":xxxxx"
	}
	return scheme + "://" + info + auth[at:] + redactQueryText(tail)
}

// passwordParam matches a parameter whose name says it is a password,
// with its value, wherever it stands after the authority.
var passwordParam = regexp.MustCompile(`(?i)([^?&#;=/]*pass[^?&#;=]*=)[^&#;]*`)

// redactQueryText masks the values of the password parameters in the text
// after the authority.
func redactQueryText(s string) string {
	return passwordParam.ReplaceAllString(s, "${1}xxxxx")
}

// splitAuthority splits the text after "scheme://" at the end of the
// authority: the first '/', '?' or '#'. A password holding one of them
// must be percent-encoded, as in any URL.
func splitAuthority(rest string) (auth, tail string) {
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	return rest[:end], rest[end:]
}

// parseURL reads the URL forms of Open.
func parseURL(raw string) (*parsedURL, error) {
	schemeText, rest, ok := strings.Cut(raw, "://")
	if !ok {
		if !strings.ContainsAny(raw, "@/?") && raw != "" {
			// A bare address: say what to write instead.
			return nil, urlError(raw, `no "://": a URL is wanted, e.g. redis://%s (rediss:// for TLS, redis+sentinel:// or rediss+sentinel:// for Sentinel)`, raw)
		}
		return nil, urlError(raw, `no "://": want redis://, rediss://, redis+sentinel:// or rediss+sentinel://`)
	}
	scheme := strings.ToLower(schemeText)
	base, sentinel := strings.CutSuffix(scheme, "+sentinel")
	if base != "redis" && base != "rediss" {
		return nil, urlError(raw, "scheme must be redis, rediss, redis+sentinel or rediss+sentinel")
	}
	auth, tail := splitAuthority(rest)
	userinfo, hostList := "", auth
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		userinfo, hostList = auth[:at+1], auth[at+1:]
	}
	defPort := "6379"
	if sentinel {
		defPort = "26379"
	}
	var hosts []string
	for h := range strings.SplitSeq(hostList, ",") {
		if h == "" {
			if hostList == "" && !sentinel {
				break // "redis://" alone: go-redis's default host
			}
			return nil, urlError(raw, "empty host in the host list %q", hostList)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = h, defPort
			if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
				host = h[1 : len(h)-1]
			}
			if strings.ContainsAny(host, "[]") || strings.Count(host, ":") == 1 {
				return nil, urlError(raw, "bad host %q", h)
			}
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, urlError(raw, "bad port in host %q", h)
		}
		if host == "" {
			return nil, urlError(raw, "empty host name in %q", h)
		}
		hosts = append(hosts, net.JoinHostPort(host, port))
	}
	path, query, _ := strings.Cut(tail, "?")
	if strings.Contains(path, "#") || strings.Contains(query, "#") {
		return nil, urlError(raw, "a fragment (#) is not allowed")
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, urlError(raw, "bad query: %s", scrub(err.Error(), raw))
	}
	p := &parsedURL{}
	take := func(name string) (string, bool) {
		if !q.Has(name) {
			return "", false
		}
		vs := q[name]
		q.Del(name)
		return vs[len(vs)-1], true
	}
	if v, ok := take(paramWait); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, urlError(raw, "%s=%q: want a number of replicas, 0 or more", paramWait, v)
		}
		p.replicas = &n
	}
	if v, ok := take(paramWaitTimeout); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, urlError(raw, "%s=%q: want a positive duration such as 500ms or 1s", paramWaitTimeout, v)
		}
		p.timeout = &d
	}
	if v, ok := take(paramPrefix); ok {
		p.prefix = &v
	}
	if p.timeout != nil && (p.replicas == nil || *p.replicas == 0) {
		return nil, urlError(raw, "%s= has no effect without %s=N (N ≥ 1: the replicas each claim waits for)", paramWaitTimeout, paramWait)
	}
	cluster := false
	if v, ok := take(paramCluster); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, urlError(raw, "%s=%q: want true or false", paramCluster, v)
		}
		cluster = b
	}
	master, hasMaster := take(paramMaster)
	sUser, hasSUser := take(paramSentinelUser)
	sPass, hasSPass := take(paramSentinelPassword)
	if !sentinel && (hasMaster || hasSUser || hasSPass) {
		return nil, urlError(raw, "%s, %s and %s are for redis+sentinel:// URLs", paramMaster, paramSentinelUser, paramSentinelPassword)
	}
	if sentinel && cluster {
		return nil, urlError(raw, "%s=true does not go with Sentinel: a Sentinel watches one primary", paramCluster)
	}
	if q.Has("addr") {
		return nil, urlError(raw, "list the hosts in the host part (h1:p1,h2:p2), not as addr=")
	}
	for _, h := range hosts[min(len(hosts), 1):] {
		q.Add("addr", h)
	}
	first := ""
	if len(hosts) > 0 {
		first = hosts[0]
	}
	// One host and the backend's parameters removed: a URL go-redis reads.
	u, err := url.Parse(base + "://" + userinfo + first + path)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, urlError(raw, "does not parse: %s", scrub(err.Error(), raw))
	}
	u.RawQuery = q.Encode()
	switch {
	case sentinel:
		if master == "" {
			return nil, urlError(raw, "redis+sentinel needs %s=NAME, the name the Sentinels monitor the primary under", paramMaster)
		}
		user := u.User
		u.User = nil // go-redis reads the userinfo as the Sentinels' credentials
		q.Set("master_name", master)
		u.RawQuery = q.Encode()
		fo, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, urlError(raw, "%s", scrub(err.Error(), raw))
		}
		if user != nil {
			fo.Username = user.Username()
			fo.Password, _ = user.Password()
		}
		fo.SentinelUsername, fo.SentinelPassword = sUser, sPass
		p.failover = fo
	case cluster:
		co, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, urlError(raw, "%s", scrub(err.Error(), raw))
		}
		p.cluster = co
	default:
		if len(hosts) > 1 {
			return nil, urlError(raw, "%d hosts: a host list needs cluster=true (Redis Cluster) or the redis+sentinel:// scheme (Sentinel)", len(hosts))
		}
		ro, err := redis.ParseURL(u.String())
		if err != nil {
			return nil, urlError(raw, "%s", scrub(err.Error(), raw))
		}
		p.single = ro
	}
	return p, nil
}

// checkWait refuses, in the URL's own words, a wait_timeout (or its
// default, DefaultReplicaTimeout) that the client's read timeout would cut
// off (New refuses it too, naming the Options fields). c is p.client(),
// whose options carry go-redis's defaults.
func (p *parsedURL) checkWait(raw string, c redis.UniversalClient, o *Options) error {
	if o.Replicas == 0 {
		return nil
	}
	wait := o.ReplicaTimeout
	if wait == 0 {
		wait = DefaultReplicaTimeout
	}
	if read, _ := readTimeout(c); read > 0 && wait >= read {
		dc := redis.NewClient(&redis.Options{})
		defaultRead := dc.Options().ReadTimeout
		_ = dc.Close()
		return urlError(raw, "%s=%v is not below the read timeout %v (read_timeout=, %v when not given): the read would give up on the WAIT first; lower %s or raise read_timeout",
			paramWaitTimeout, wait, read, defaultRead, paramWaitTimeout)
	}
	return nil
}

// client builds the client the URL describes.
func (p *parsedURL) client() redis.UniversalClient {
	switch {
	case p.failover != nil:
		return redis.NewFailoverClient(p.failover)
	case p.cluster != nil:
		return redis.NewClusterClient(p.cluster)
	}
	return redis.NewClient(p.single)
}

// scrub removes the URL's password from a message, in case a parser
// repeated it.
func scrub(msg, raw string) string {
	_, rest, _ := strings.Cut(raw, "://")
	auth, tail := splitAuthority(rest)
	var secrets []string
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		if _, pw, ok := strings.Cut(auth[:at], ":"); ok {
			secrets = append(secrets, pw)
			if d, err := url.PathUnescape(pw); err == nil {
				secrets = append(secrets, d)
			}
		}
	}
	if _, query, ok := strings.Cut(tail, "?"); ok {
		for part := range strings.SplitSeq(query, "&") {
			if name, v, has := strings.Cut(part, "="); has && strings.Contains(strings.ToLower(name), "pass") {
				secrets = append(secrets, v)
				if d, err := url.QueryUnescape(v); err == nil {
					secrets = append(secrets, d)
				}
			}
		}
	}
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
		}
	}
	return msg
}
