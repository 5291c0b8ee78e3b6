package main

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestRedactForms(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:pw@h:1/0":                                                   "redis://u:xxxxx@h:1/0",
		"postgres://bob:Sup3r@S3cret@127.0.0.1:1/db":                           "postgres://bob:xxxxx@127.0.0.1:1/db",
		"postgres://bob:pa@ssw0rd123@127.0.0.1:1/db":                           "postgres://bob:xxxxx@127.0.0.1:1/db",
		"redis://:pw@h:1":                                                      "redis://xxxxx@h:1",
		"mysql://app:pw@h:3306/db":                                             "mysql://app:xxxxx@h:3306/db",
		"mysql://root@h:3306/db":                                               "mysql://xxxxx@h:3306/db",
		"nats://s3cr3ttoken@h:4222":                                            "nats://xxxxx@h:4222",
		"nats://user:pass@h:4222,nats://h2":                                    "nats://xxxxx@h:4222,nats://h2",
		"postgres://u:p/a@s?s#w@h:5432/db":                                     "postgres://u:xxxxx@h:5432/db",
		"postgres://h/db?user=u&password=s3cr3t&x=1":                           "postgres://h/db?user=u&password=xxxxx&x=1",
		"postgres://h/db?sslpassword=s3cr3t":                                   "postgres://h/db?sslpassword=xxxxx",
		"nats://h?token=abc123":                                                "nats://h?token=xxxxx",
		"sqlite:/tmp/a@b.db":                                                   "sqlite:/tmp/a@b.db",
		"sqlite:/tmp/a.db?password=s3cr3t&prefix=x_":                           "sqlite:/tmp/a.db?password=xxxxx&prefix=x_",
		"sqlite:/tmp/a@b.db?_auth_pass=pw":                                     "sqlite:/tmp/a@b.db?_auth_pass=xxxxx",
		"memory:?token=abc123":                                                 "memory:?token=xxxxx",
		"file:/x.db?key=k#frag":                                                "file:/x.db?key=xxxxx#frag",
		"user:pw@host:5432":                                                    "user:xxxxx@host:5432",
		"redis+sentinel://u:pw@s1,s2:26380,s3/?master=m&sentinel_password=spw": "redis+sentinel://u:xxxxx@s1,s2:26380,s3/?master=m&sentinel_password=xxxxx",
		"rediss+sentinel://:pw@[::1]:26379,s2?master=m":                        "rediss+sentinel://xxxxx@[::1]:26379,s2?master=m",
		"redis://:pw@a:1,b:2,c?cluster=true&wait=1&wait_timeout=1s":            "redis://xxxxx@a:1,b:2,c?cluster=true&wait=1&wait_timeout=1s",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// An error of the URL parser or a driver that repeats a password, whole,
// cut at an '@', or percent-decoded, is scrubbed.
func TestScrub(t *testing.T) {
	raw := "postgres://u:p%40ss:w@rd@h:5432/db"
	_, err := url.Parse(raw)
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	for _, msg := range []string{"connect " + raw + " failed", "bad password p@ss:w@rd", "bad password p%40ss:w", "x " + errString(err)} {
		got := scrub(msg, raw)
		for _, leak := range []string{"p@ss", "p%40ss", "w@rd"} {
			if strings.Contains(got, leak) {
				t.Errorf("scrub(%q) = %q: leaks %q", msg, got, leak)
			}
		}
	}
}

// The secret query parameters of sqlite: and memory: URLs are scrubbed
// from messages too.
func TestScrubPathSchemes(t *testing.T) {
	for _, raw := range []string{"sqlite:/tmp/t.db?password=hunter22", "memory:?token=hunter22"} {
		for _, msg := range []string{"open " + raw + ": failed", "auth hunter22 refused"} {
			if got := scrub(msg, raw); strings.Contains(got, "hunter22") {
				t.Errorf("scrub(%q, %q) = %q", msg, raw, got)
			}
		}
	}
}

// A password shorter than minBare is masked where it stands as a
// credential only: the rest of the message is left as it was, so it is
// neither mangled nor a map of where the secret's letters are.
func TestScrubShortPassword(t *testing.T) {
	for _, c := range []struct{ raw, msg, want string }{
		{"postgres://user:e@db.example:5432/anarchon", "password authentication failed for user \"user\" at db.example",
			"password authentication failed for user \"user\" at db.example"},
		{"postgres://user:e@db.example:5432/anarchon", "connect postgres://user:e@db.example:5432/anarchon: refused",
			"connect postgres://user:xxxxx@db.example:5432/anarchon: refused"},
		{"postgres://user:e@db.example:5432/anarchon", "dial tcp user:e@db.example: refused", "dial tcp xxxxx@db.example: refused"},
		{"redis://:p@h:6379/0", "redis: dial h:6379: open pipe; url redis://:p@h:6379", "redis: dial h:6379: open pipe; url redis://xxxxx@h:6379"},
		{"postgres://h/db?password=p", "bad option password=p, user=p", "bad option password=xxxxx, user=xxxxx"},
		{"postgres://h/db?password=abc", "abcde: password=abc", "abcde: password=xxxxx"},
		{"nats://ab@h:4222", "nats: authorization violation for nats://ab@h:4222 (tab)", "nats: authorization violation for nats://xxxxx@h:4222 (tab)"},
	} {
		if got := scrub(c.msg, c.raw); got != c.want {
			t.Errorf("scrub(%q, %q)\n = %q\nwant %q", c.msg, c.raw, got, c.want)
		}
	}
	// From four characters on, a credential is masked wherever it appears.
	if got := scrub("the server said: pw4x is wrong", "postgres://u:pw4x@h/db"); got != "the server said: xxxxx is wrong" {
		t.Errorf("a 4-character password: %q", got)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A parser that ends the userinfo at the first '@' takes the rest of the
// password for the host, and a resolver error repeats it: every piece of
// the password after an '@' is scrubbed, short ones where they stand
// before the '@' of the host.
func TestScrubPasswordAfterAt(t *testing.T) {
	for _, c := range []struct{ raw, msg, leak string }{
		{"postgres://bob:Sup3r@S3cret@127.0.0.1:1/db", "hostname resolving error: lookup S3cret@127.0.0.1: no such host", "S3cret"},
		{"postgres://bob:pa@ssw0rd123@127.0.0.1:1/db", "hostname resolving error: lookup ssw0rd123@127.0.0.1: no such host", "ssw0rd123"},
		{"postgres://bob:a@b@c@d1@h:1/db", "lookup b@c@d1@h: no such host", "b@c@d1"},
		{"postgres://bob:Sup3r@ok@h:1/db", "hostname resolving error: lookup ok@h: no such host", "ok@"},
		{"postgres://bob:x@y/z@h:1/db", "dial y/z@h: refused", "y/z"},
	} {
		got := scrub(c.msg, c.raw)
		if strings.Contains(got, c.leak) {
			t.Errorf("scrub(%q, %q) = %q: reveals %q", c.msg, c.raw, got, c.leak)
		}
		if got := redact(c.raw); strings.Contains(got, c.leak) {
			t.Errorf("redact(%q) = %q", c.raw, got)
		}
	}
}

// FuzzRedact: no store URL, whatever its password, user, host, path and
// query, reveals the password through redact, nor through scrub of a
// message that repeats the URL; a password of minBare (4) or more
// characters is not revealed either by scrub of a message that repeats it
// alone, nor is any piece of a password after one of its '@' by scrub
// of a resolver's error that took it for the host. A shorter one is left where it is not a credential (scrub does
// not replace it as bare text: see minBare), so such a message is left
// unchanged. The corpus is kept in testdata/fuzz/FuzzRedact.
func FuzzRedact(f *testing.F) {
	f.Add(0, "u", "s3cr3t-pw", "h:5432", "/db")
	f.Add(1, "", "p@ss/w?rd#x", "h:6379", "/0")
	f.Add(2, "tok", "", "h:4222", "")
	f.Add(0, "u", "a:b@c", "h", "?sslmode=disable")
	f.Add(3, "u", "%zz%41", "h", "")
	f.Add(0, "user", "e", "db.example:5432", "/anarchon")
	f.Add(1, "", "p", "h:6379", "/0")
	f.Add(0, "u", "pw4x", "h", "?sslmode=disable")
	f.Add(2, "ab", "", "h:4222", "")
	f.Add(0, "bob", "Sup3r@S3cret", "127.0.0.1:1", "/db")
	f.Add(0, "bob", "pa@ssw0rd123", "127.0.0.1:1", "/db")
	f.Add(1, "", "a@bc@defg", "h:6379", "/0")
	f.Add(0, "bob", "long3r@ab", "h", "/db")
	schemes := []string{"postgres", "redis", "nats", "tls", "rediss", "weird+scheme"}
	f.Fuzz(func(t *testing.T, si int, user, pw, host, rest string) {
		scheme := schemes[(si%len(schemes)+len(schemes))%len(schemes)]
		if strings.Contains(user, ":") {
			return // a user name ends at the first ':': the rest is the password
		}
		secret := pw
		raw := scheme + "://" + user + ":" + pw + "@" + host + rest
		if pw == "" { // a token alone: nats://TOKEN@host
			secret = user
			raw = scheme + "://" + user + "@" + host + rest
			if userSchemes[scheme] {
				return // a user name alone is not a secret there
			}
		}
		// The secret must be one that leaves a trace only through a leak.
		// What a redaction leaves must not hold it by chance.
		skeleton := scheme + "://" + user + ":" + mask + "@" + host + rest
		if secret == "" || strings.Contains(skeleton, secret) || strings.Contains("password  refused dial : refused", secret) {
			return
		}
		if got := redact(raw); strings.Contains(got, secret) {
			t.Fatalf("redact(%q) = %q reveals %q", raw, got, secret)
		}
		if got := scrub("dial "+raw+": refused", raw); strings.Contains(got, secret) {
			t.Fatalf("scrub of the URL %q = %q reveals %q", raw, got, secret)
		}
		// A parser that ends the userinfo at an '@' of the password takes
		// the rest for the host, and a resolver repeats it before the
		// host's '@': that piece is scrubbed whatever its length.
		for i := range len(pw) {
			if pw[i] != '@' {
				continue
			}
			tail := pw[i+1:]
			frame := "lookup @" + host + ": no such host " + mask
			if tail == "" || strings.Contains(frame, tail) {
				continue
			}
			msg := "lookup " + tail + "@" + host + ": no such host"
			if got := scrub(msg, raw); strings.Contains(got, tail) {
				t.Fatalf("scrub(%q, %q) = %q reveals %q", msg, raw, got, tail)
			}
		}
		if len(secret) < minBare {
			// Only where it stands as a credential: a plain message that
			// happens to hold its letters is left alone.
			if msg := "password " + secret + " refused"; scrub(msg, raw) != msg {
				t.Fatalf("scrub(%q, %q) = %q: a short secret replaced as bare text", msg, raw, scrub(msg, raw))
			}
			return
		}
		msgs := []string{"dial " + raw + ": refused", "password " + secret + " refused"}
		if _, err := url.Parse(raw); err != nil {
			// The parser's error repeats what it took for a host or port:
			// a password cut at '/', '?', '#' or '@'.
			var ue *url.Error
			if errors.As(err, &ue) {
				msgs = append(msgs, ue.Err.Error())
			}
			if i := strings.IndexAny(secret, "/?#@"); i >= minBare && !strings.Contains(skeleton, secret[:i]) && !strings.Contains("password  refused dial : refused", secret[:i]) {
				secret = secret[:i] // the part a parser would repeat
			}
		}
		for _, msg := range msgs {
			if got := scrub(msg, raw); strings.Contains(got, secret) {
				t.Fatalf("scrub(%q) = %q reveals %q", msg, got, secret)
			}
		}
	})
}

// A parameter whose name is percent-encoded ("%74oken" is "token") is a
// secret for scrub as it is for redact: both judge names by one rule.
func TestScrubEncodedParamName(t *testing.T) {
	raw := "postgres://h/db?%74oken=s3cr3t-value&prefix=x_"
	if got := redact(raw); strings.Contains(got, "s3cr3t-value") {
		t.Errorf("redact(%q) = %q", raw, got)
	}
	if got := scrub("the server refused s3cr3t-value", raw); strings.Contains(got, "s3cr3t-value") {
		t.Errorf("scrub = %q: leaks the value", got)
	}
}
