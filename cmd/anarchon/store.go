package main

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/anarchon/anarchon"
)

// defaultStore is the store URL when --store is not given: an SQLite file
// in the working directory.
const defaultStore = "sqlite:./anarchon.db"

// StoreErrorCode is the stable kind of a [StoreURLError].
type StoreErrorCode string

// Store URL error codes.
const (
	StoreBadURL        StoreErrorCode = "bad_url"             // the URL does not parse, or a part of it is wrong
	StoreUnknownScheme StoreErrorCode = "unknown_scheme"      // no store has this scheme
	StoreUnavailable   StoreErrorCode = "backend_unavailable" // the scheme is known but this build has no backend for it
	StoreOpenFailed    StoreErrorCode = "open_failed"         // the backend's constructor refused the URL
	StoreUnknownParam  StoreErrorCode = "unknown_parameter"   // a query parameter the store does not take
	StoreNoData        StoreErrorCode = "no_anarchon_data"    // a read-only command found no anarchon data there, and created none
)

// StoreURLError reports a --store URL that cannot be used. URL is redacted:
// it never holds a password.
type StoreURLError struct {
	URL    string         // the URL, password replaced by "xxxxx"
	Code   StoreErrorCode // stable kind
	Reason string         // what is wrong
	Err    error          // the backend's error, if any
}

// Error returns `store URL "<redacted>": <reason> (<code>)`, the code at
// the end of the first line when the reason has several. The URL is
// quoted as every flag value in an error is: a URL with a space, a colon
// or nothing at its end would otherwise run into the reason.
func (e *StoreURLError) Error() string {
	return withCode(fmt.Sprintf("store URL %q: %s", e.URL, e.Reason), string(e.Code))
}

// Unwrap returns the backend's error, if any.
func (e *StoreURLError) Unwrap() error { return e.Err }

// usage reports whether the error is in the URL as written (it does not
// parse, names no store, or has a parameter the store does not take): a
// bad flag value, exit status 2. A URL that is well formed but whose store
// cannot be opened or reached (open_failed, no_anarchon_data) or is not in
// this build (backend_unavailable) is a failure of the command: exit 1.
func (e *StoreURLError) usage() bool {
	switch e.Code {
	case StoreBadURL, StoreUnknownScheme, StoreUnknownParam:
		return true
	}
	return false
}

// opener opens the backend of one URL scheme. u is the parsed URL, raw the
// text as given (some clients parse it themselves) and prefix the value of
// the "prefix" query parameter, already removed from u and raw. A
// *StoreURLError it returns without a URL is given the URL as written,
// redacted.
// With mustExist the backend must create nothing (no bucket, stream or
// key) where no anarchon data is: the read-only commands open it so.
type opener func(u *url.URL, raw, prefix string, mustExist bool) (anarchon.Backend, error)

// openers maps a URL scheme to its backend; each store's file registers
// itself in an init function.
var openers = map[string]opener{}

// storeParams are the query parameters each scheme takes, for the schemes
// whose client would otherwise ignore an unknown one (a misspelt
// "prefx=" would silently use the default prefix). PostgreSQL and Redis
// are not listed: pgx and go-redis check their own parameters (pgx sends
// an unknown one to the server, which refuses it; go-redis refuses it).
var storeParams = map[string][]string{
	"sqlite": {"prefix"},
	"nats":   {"prefix", "replicas", "timeout"},
	"memory": {},
}

// replicationOf describe a store's replication as its backend found it at
// Init, for the start-up summary and /status; each returns "" for a
// backend it does not know. Store files add to it.
var replicationOf []func(anarchon.Backend) string

// storeReplication describes b's replication, "" when b does not report
// it.
func storeReplication(b anarchon.Backend) string {
	for _, f := range replicationOf {
		if s := f(b); s != "" {
			return s
		}
	}
	return ""
}

// plannedSchemes are schemes of stores anarchon knows of whose backend is not
// in this build; they get StoreUnavailable instead of StoreUnknownScheme.
var plannedSchemes = map[string]string{
	"postgres":        "PostgreSQL",
	"postgresql":      "PostgreSQL",
	"redis":           "Redis",
	"rediss":          "Redis",
	"redis+sentinel":  "Redis",
	"rediss+sentinel": "Redis",
	"nats":            "NATS",
	"sqlite":          "SQLite",
	"memory":          "memory",
}

// waitForStore is set by "run", whose start retries a store that is not
// ready (--start-timeout): a store whose client connects when it is opened
// (NATS) then opens without a server and keeps connecting in the
// background, instead of failing the open.
var waitForStore atomic.Bool

// openStore opens the backend a --store URL names. Errors are
// *StoreURLError (the backend's own error wrapped) and never contain a
// password.
func openStore(raw string) (anarchon.Backend, error) { return openStoreMode(raw, false) }

// openStoreMode is openStore; with mustExist the backend creates nothing
// where no anarchon data is (for the read-only commands).
func openStoreMode(raw string, mustExist bool) (anarchon.Backend, error) {
	if raw == "" {
		raw = defaultStore
	}
	given := raw // raw loses its "prefix" parameter below
	bad := func(code StoreErrorCode, err error, format string, args ...any) error {
		return &StoreURLError{URL: redact(given), Code: code, Reason: fmt.Sprintf(format, args...), Err: err}
	}
	i := strings.Index(raw, ":")
	if i <= 0 {
		return nil, bad(StoreBadURL, nil, "no scheme: want sqlite:PATH, postgres://…, mysql://…, redis://…, nats://… or memory:")
	}
	scheme := strings.ToLower(raw[:i])
	if _, known := openers[scheme]; !known && isPort(raw[i+1:]) {
		// "127.0.0.1:6379", the commonest slip: a server's address
		// without the scheme that names its kind.
		return nil, bad(StoreBadURL, nil, "a host and port, not a store URL: give its scheme, e.g. redis://%s, postgres://%s, mysql://%s or nats://%s", raw, raw, raw, raw)
	}
	if rest, ok := strings.CutPrefix(raw[i+1:], "//"); ok {
		// An "@" left unescaped in the user or password makes the
		// drivers read part of the password as the host (pgx looked up
		// "S3cret@host"): refuse it rather than try the wrong server.
		if end := strings.IndexAny(rest, "/?#"); end >= 0 {
			rest = rest[:end]
		}
		if strings.Count(rest, "@") > 1 {
			return nil, bad(StoreBadURL, nil, `the user name or password contains "@": write it as %%40`)
		}
	}
	if rawSchemes[scheme] {
		if open, ok := openers[scheme]; ok {
			if name, n := repeatedParam(raw); n > 1 {
				return nil, bad(StoreBadURL, nil, "query parameter %q given %d times: give it once", name, n)
			}
			return openRaw(open, raw, mustExist, bad)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the whole URL, password included: keep its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		hint := ""
		if multiHost(raw) {
			// Go's URL parser, which pgx uses too, reads what follows the
			// last ':' of the host list as the port.
			hint = " (in a URL with several hosts, give each its port: h1:5432,h2:5432)"
		}
		return nil, bad(StoreBadURL, nil, "does not parse: %s%s", scrub(err.Error(), raw), hint)
	}
	open, ok := openers[scheme]
	if !ok {
		if what, known := plannedSchemes[scheme]; known {
			return nil, bad(StoreUnavailable, nil, "this build of anarchon has no %s backend", what)
		}
		return nil, bad(StoreUnknownScheme, nil, "unknown scheme %q (known: %s)", scheme, strings.Join(knownSchemes(), ", "))
	}
	if name, n := repeatedParam(raw); n > 1 {
		return nil, bad(StoreBadURL, nil, "query parameter %q given %d times: give it once", name, n)
	}
	q := u.Query()
	if known, ok := storeParams[scheme]; ok {
		var unknown []string
		for name := range q {
			if !slices.Contains(known, name) {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			takes := "none"
			if len(known) > 0 {
				takes = strings.Join(known, ", ")
			}
			return nil, bad(StoreUnknownParam, nil, "unknown query parameter %s (%s: takes %s)", strings.Join(quoteAll(unknown), ", "), scheme, takes)
		}
	}
	prefix := q.Get("prefix")
	if q.Has("prefix") {
		q.Del("prefix")
		u.RawQuery = q.Encode()
		raw = u.String()
	}
	b, err := open(u, raw, prefix, mustExist)
	if err != nil {
		var se *StoreURLError
		if errors.As(err, &se) {
			if se.URL == "" {
				se.URL = redact(given)
			}
			return nil, err
		}
		return nil, bad(StoreOpenFailed, err, "%s", scrub(err.Error(), raw))
	}
	return b, nil
}

// repeatedParam returns the first query parameter of raw that is given
// more than once (names compared unescaped, "pre%66ix" is "prefix") and
// how many times; "", 0 when none is. A client would take one of the
// values and drop the others without a word, so a repeated parameter is
// refused (bad_url) in every store URL form.
func repeatedParam(raw string) (string, int) {
	_, query, ok := strings.Cut(raw, "?")
	if !ok {
		return "", 0
	}
	query, _, _ = strings.Cut(query, "#")
	seen := map[string]int{}
	var order []string
	for part := range strings.SplitSeq(query, "&") {
		if part == "" {
			continue
		}
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if seen[name] == 0 {
			order = append(order, name)
		}
		seen[name]++
	}
	for _, name := range order {
		if seen[name] > 1 {
			return name, seen[name]
		}
	}
	return "", 0
}

// multiHost reports whether the authority of raw lists several hosts
// (h1:5432,h2:5432).
func multiHost(raw string) bool {
	_, rest, ok := strings.Cut(raw, "//")
	if !ok {
		return false
	}
	rest = rest[strings.LastIndexByte(rest, '@')+1:]
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	return strings.Contains(rest, ",")
}

// rawSchemes are the schemes whose opener reads the whole URL itself,
// query parameters and "prefix" included, because their URLs need not
// parse as one URL (a Redis host list "redis://a,b,c?cluster=true"). Their
// opener gets a nil URL and an empty prefix.
var rawSchemes = map[string]bool{}

// openRaw calls the opener of a rawSchemes scheme, coding its errors as
// openStore does.
func openRaw(open opener, raw string, mustExist bool, bad func(StoreErrorCode, error, string, ...any) error) (anarchon.Backend, error) {
	b, err := open(nil, raw, "", mustExist)
	if err != nil {
		var se *StoreURLError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, bad(StoreOpenFailed, err, "%s", scrub(err.Error(), raw))
	}
	return b, nil
}

// quoteAll quotes each name, for a message.
func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// knownSchemes lists the schemes this build can open, sorted.
func knownSchemes() []string {
	out := make([]string, 0, len(openers))
	for s := range openers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// isPort reports whether s is a port number: digits alone.
func isPort(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
