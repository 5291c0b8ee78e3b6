package main

import (
	"net/url"
	"strings"
)

// The redactor. A store URL reaches errors, the start-up summary,
// /status and logs only through redact, and an error text that might
// repeat it (a driver's, the URL parser's) only through scrub. Both work on
// text that does not parse as a URL, so a password holding '/', '@', '?'
// or '#' does not leak through a parse that split it.

// mask replaces every secret.
const mask = "xxxxx"

// pathSchemes name a file or nothing: their path has no credentials, and
// an '@' in a file name is not a user; their query parameters may still
// be secrets, and are redacted like any other scheme's.
var pathSchemes = map[string]bool{"sqlite": true, "memory": true, "file": true}

// userSchemes keep the user name when a password follows it; in the other
// schemes a user name alone is a credential (a NATS token: nats://TOKEN@h).
var userSchemes = map[string]bool{"postgres": true, "postgresql": true, "mysql": true, "redis": true, "rediss": true, "redis+sentinel": true, "rediss+sentinel": true}

// secretParams are query parameters whose values are credentials.
var secretParams = []string{"pass", "pwd", "token", "secret", "key", "auth", "cred", "jwt", "seed", "nkey", "sig"}

// secretParam reports whether a query parameter's name, as written or
// percent-decoded, says its value is a credential. redact and secrets
// both judge names by it, so that scrub hides every value redact masks.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	if dn, err := url.QueryUnescape(name); err == nil {
		n = strings.ToLower(dn)
	}
	for _, w := range secretParams {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// redact returns raw with its credentials replaced by "xxxxx": the
// userinfo (everything between "//" and the last '@', which covers a
// password holding '@', '/', '?' or '#'), keeping the user name of
// schemes where it is not a secret, and the values of query parameters
// whose names say they are secret (password=, token=, sslkey=, …).
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok {
		return redactUserinfo("", raw)
	}
	if pathSchemes[strings.ToLower(scheme)] {
		return scheme + ":" + redactQuery(rest)
	}
	return scheme + ":" + redactUserinfo(strings.ToLower(scheme), rest)
}

// redactUserinfo redacts the text after "scheme:".
func redactUserinfo(scheme, rest string) string {
	prefix := ""
	if r, ok := strings.CutPrefix(rest, "//"); ok {
		prefix, rest = "//", r
	}
	at := strings.LastIndexByte(rest, '@')
	if at >= 0 {
		info := rest[:at]
		user, _, hasPass := strings.Cut(info, ":")
		keep := hasPass && userSchemes[scheme] && !strings.ContainsAny(user, "/?#@") && user != ""
		if keep {
			info = user + ":" + mask
		} else {
			info = mask
		}
		rest = info + rest[at:]
	}
	return prefix + redactQuery(rest)
}

// redactQuery masks the values of secret query parameters in the text
// after the authority (which holds no '@' any more but the mask's).
func redactQuery(s string) string {
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return s
	}
	head, query := s[:q+1], s[q+1:]
	frag := ""
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, frag = query[:h], query[h:]
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		if name, _, hasValue := strings.Cut(p, "="); hasValue && secretParam(name) {
			parts[i] = name + "=" + mask
		}
	}
	return head + strings.Join(parts, "&") + frag
}

// secrets returns the credentials raw holds, as they may appear in an
// error text: the userinfo as written and decoded, its password part and
// the values of secret query parameters, longest first.
func secrets(raw string) []string {
	var out []string
	add := func(s string) {
		if s != "" && s != mask {
			out = append(out, s)
			if d, err := url.PathUnescape(s); err == nil && d != s && d != "" {
				out = append(out, d)
			}
		}
	}
	scheme, rest, ok := strings.Cut(raw, ":")
	path := ok && pathSchemes[strings.ToLower(scheme)]
	if !ok {
		rest = raw
	}
	rest = strings.TrimPrefix(rest, "//")
	if at := strings.LastIndexByte(rest, '@'); at >= 0 && !path {
		info := rest[:at]
		add(info)
		if _, pw, has := strings.Cut(info, ":"); has {
			add(pw)
			// A parser may end the password at any '@' (taking the rest
			// for the host: "lookup S3cret@127.0.0.1"), or take '/', '?'
			// or '#' for the end of the host: every piece before, after
			// and between these separators may reach an error text.
			for i := range len(pw) {
				if strings.IndexByte("@/?#", pw[i]) >= 0 {
					add(pw[:i])
					add(pw[i+1:])
					for j := i + 1; j < len(pw); j++ {
						if strings.IndexByte("@/?#", pw[j]) >= 0 {
							add(pw[i+1 : j])
						}
					}
				}
			}
		} else if !userSchemes[strings.ToLower(scheme)] {
			add(info) // a token
		}
	}
	if q := strings.IndexByte(raw, '?'); q >= 0 {
		for p := range strings.SplitSeq(raw[q+1:], "&") {
			if name, v, has := strings.Cut(p, "="); has && secretParam(name) {
				if h := strings.IndexByte(v, '#'); h >= 0 {
					v = v[:h]
				}
				add(v)
			}
		}
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil && !path {
		if pw, ok := u.User.Password(); ok {
			add(pw)
		}
	}
	// Longest first, so that a secret holding another is replaced whole.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// minBare is the shortest secret scrub replaces wherever it appears. A
// shorter one ("e", "pw") is also an ordinary piece of text: replacing all
// of its occurrences would mangle the message and, by the gaps it leaves,
// show the secret. It is replaced only where it stands as a credential.
const minBare = 4

// scrub removes from msg the credentials of the store URL raw, in case a
// driver or the URL parser repeated them (whole, decoded, or cut at an
// '@'), and redacts raw itself where msg holds it.
//
// The rule: the URL itself and every credential of minBare or more
// characters are replaced wherever they appear; a shorter credential only
// where it stands as one (inCredentialPlace): as userinfo (":pw@",
// "//token@") or as a parameter's value ("password=pw").
func scrub(msg, raw string) string {
	if raw != "" {
		msg = strings.ReplaceAll(msg, raw, redact(raw))
	}
	for _, s := range secrets(raw) {
		if len(s) >= minBare {
			msg = strings.ReplaceAll(msg, s, mask)
		} else {
			msg = replaceInPlace(msg, s)
		}
	}
	return msg
}

// replaceInPlace masks the occurrences of s in msg that stand where a
// credential does.
func replaceInPlace(msg, s string) string {
	var b strings.Builder
	i := 0
	for {
		j := strings.Index(msg[i:], s)
		if j < 0 {
			break
		}
		j += i
		end := j + len(s)
		if inCredentialPlace(msg, j, end) {
			b.WriteString(msg[i:j])
			b.WriteString(mask)
		} else {
			b.WriteString(msg[i:end])
		}
		i = end
	}
	b.WriteString(msg[i:])
	return b.String()
}

// inCredentialPlace reports whether msg[start:end] is a URL's userinfo
// part (after ':' or '/', before '@') or the value of a parameter (after
// '=', up to the end of the text, a separator or a quote).
func inCredentialPlace(msg string, start, end int) bool {
	if start == 0 {
		return end < len(msg) && msg[end] == '@'
	}
	before := msg[start-1]
	after := byte(0) // the end of msg
	if end < len(msg) {
		after = msg[end]
	}
	switch before {
	case ':', '/', ' ', '\t', '"', '\'', '(', '@', '?', '#':
		// userinfo, or a password's piece a parser took for the start of
		// a host ("lookup pw@127.0.0.1")
		return after == '@'
	case '=':
		return after == 0 || strings.IndexByte("&#; \t\r\n\"',)", after) >= 0
	}
	return false
}
