package main

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestRedactForms(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:pw@h:1/0":                         "redis://u:xxxxx@h:1/0",
		"redis://:pw@h:1":                            "redis://xxxxx@h:1",
		"nats://s3cr3ttoken@h:4222":                  "nats://xxxxx@h:4222",
		"nats://user:pass@h:4222,nats://h2":          "nats://xxxxx@h:4222,nats://h2",
		"postgres://u:p/a@s?s#w@h:5432/db":           "postgres://u:xxxxx@h:5432/db",
		"postgres://h/db?user=u&password=s3cr3t&x=1": "postgres://h/db?user=u&password=xxxxx&x=1",
		"postgres://h/db?sslpassword=s3cr3t":         "postgres://h/db?sslpassword=xxxxx",
		"nats://h?token=abc123":                      "nats://h?token=xxxxx",
		"sqlite:/tmp/a@b.db":                         "sqlite:/tmp/a@b.db",
		"user:pw@host:5432":                          "user:xxxxx@host:5432",
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

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzRedact: no store URL, whatever its password, user, host, path and
// query, reveals the password through redact, nor through scrub of a
// message that repeats the URL or the password. The corpus is kept in
// testdata/fuzz/FuzzRedact.
func FuzzRedact(f *testing.F) {
	f.Add(0, "u", "s3cr3t-pw", "h:5432", "/db")
	f.Add(1, "", "p@ss/w?rd#x", "h:6379", "/0")
	f.Add(2, "tok", "", "h:4222", "")
	f.Add(0, "u", "a:b@c", "h", "?sslmode=disable")
	f.Add(3, "u", "%zz%41", "h", "")
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
		if len(secret) < 6 || strings.Contains(skeleton, secret) || strings.Contains("password  refused dial : refused", secret) {
			return
		}
		if got := redact(raw); strings.Contains(got, secret) {
			t.Fatalf("redact(%q) = %q reveals %q", raw, got, secret)
		}
		msgs := []string{"dial " + raw + ": refused", "password " + secret + " refused"}
		if _, err := url.Parse(raw); err != nil {
			// The parser's error repeats what it took for a host or port:
			// a password cut at '/', '?', '#' or '@'.
			var ue *url.Error
			if errors.As(err, &ue) {
				msgs = append(msgs, ue.Err.Error())
			}
			if i := strings.IndexAny(secret, "/?#@"); i >= 6 && !strings.Contains(skeleton, secret[:i]) {
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
