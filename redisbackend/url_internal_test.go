package redisbackend

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseURLForms: each URL form gives the client it names, with the
// hosts, credentials and backend options it lists.
func TestParseURLForms(t *testing.T) {
	p, err := parseURL("redis+sentinel://app:pw1@s1,s2:26380,[::1]/2?master=mymaster&wait=1&wait_timeout=750ms&sentinel_password=spw&dial_timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	fo := p.failover
	if fo == nil || fo.MasterName != "mymaster" || fo.Username != "app" || fo.Password != "pw1" || fo.SentinelPassword != "spw" || fo.DB != 2 || fo.DialTimeout != 2*time.Second {
		t.Errorf("sentinel options: %+v", fo)
	}
	if want := []string{"s1:26379", "s2:26380", "[::1]:26379"}; fo == nil || !slices.Equal(fo.SentinelAddrs, want) {
		t.Errorf("sentinel addrs %v, want %v", fo.SentinelAddrs, want)
	}
	if p.replicas == nil || *p.replicas != 1 || p.timeout == nil || *p.timeout != 750*time.Millisecond {
		t.Errorf("wait options: %v %v", p.replicas, p.timeout)
	}

	p, err = parseURL("redis://:pw2@a:7000,b:7001,c?cluster=true&prefix=app")
	if err != nil {
		t.Fatal(err)
	}
	if co := p.cluster; co == nil || co.Password != "pw2" || !slices.Equal(co.Addrs, []string{"a:7000", "b:7001", "c:6379"}) {
		t.Errorf("cluster options: %+v", p.cluster)
	}
	if p.prefix == nil || *p.prefix != "app" || p.replicas != nil {
		t.Errorf("cluster backend options: %v %v", p.prefix, p.replicas)
	}

	p, err = parseURL("rediss://u:pw3@h:6380/1?read_timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	if ro := p.single; ro == nil || ro.Addr != "h:6380" || ro.DB != 1 || ro.Password != "pw3" || ro.TLSConfig == nil || ro.ReadTimeout != 3*time.Second {
		t.Errorf("single options: %+v", p.single)
	}
	p, err = parseURL("redis://h?cluster=false&wait=0")
	if err != nil || p.single == nil || p.replicas == nil || *p.replicas != 0 {
		t.Errorf("cluster=false: %+v, %v", p, err)
	}
}

// TestParseURLBad: a URL the backend cannot use is ErrInvalidInput with a
// reason, and never shows its password.
func TestParseURLBad(t *testing.T) {
	const pw = "Zq7-secret"
	for _, c := range []struct{ url, want string }{
		{"redis+sentinel://u:" + pw + "@s1,s2,s3/", "needs master=NAME"},
		{"redis+sentinel://u:" + pw + "@s1/?master=m&cluster=true", "does not go with Sentinel"},
		{"redis://u:" + pw + "@a,b,c", "needs cluster=true"},
		{"redis://u:" + pw + "@a,,c?cluster=true", "empty host"},
		{"redis://u:" + pw + "@a:0?cluster=true", "bad port"},
		{"redis://u:" + pw + "@a:x,b?cluster=true", "bad port"},
		{"redis://u:" + pw + "@:6379,b?cluster=true", "empty host name"},
		{"redis://u:" + pw + "@h?wait=-1", "wait=\"-1\""},
		{"redis://u:" + pw + "@h?wait=two", "wait=\"two\""},
		{"redis://u:" + pw + "@h?wait_timeout=5", "wait_timeout=\"5\""},
		{"redis://u:" + pw + "@h?wait_timeout=500ms", "no effect without wait=N"},
		{"redis://u:" + pw + "@h?wait=0&wait_timeout=500ms", "no effect without wait=N"},
		{"redis://u:" + pw + "@h?cluster=maybe", "cluster=\"maybe\""},
		{"redis://u:" + pw + "@h?master=m", "are for redis+sentinel"},
		{"redis://u:" + pw + "@a?cluster=true&addr=b:1", "not as addr="},
		{"redis://u:" + pw + "@h?bogus=1", "unexpected option"},
		{"redis+sentinel://u:" + pw + "@s1?master=m&bogus=1", "unexpected option"},
		{"redis://u:" + pw + "@h/0#frag", "fragment"},
		{"http://u:" + pw + "@h", "scheme must be"},
		{"u:" + pw + "@h", `redis URL xxxxx@h: no "://": want`},
		{"h?password=" + pw, `redis URL h?password=xxxxx`},
		{"127.0.0.1:6379", `redis URL 127.0.0.1:6379: no "://": a URL is wanted, e.g. redis://127.0.0.1:6379`},
		{"redis://u:" + pw + "@h?x=%zz", "bad query"},
		{"redis+sentinel://u:" + pw + "@s1/x/y?master=m", "invalid URL path"},
		{"redis://u:" + pw + "@h?sentinel_password=" + pw, "are for redis+sentinel"},
	} {
		_, err := parseURL(c.url)
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrInvalidInput saying %q", strings.ReplaceAll(c.url, pw, "PW"), err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("%s: the error shows the password: %v", strings.ReplaceAll(c.url, pw, "PW"), err)
		}
	}
}

// FuzzParseURL: whatever the URL, parseURL does not panic, and no error
// shows a password that stands in the userinfo or a password parameter.
// The corpus is kept in testdata/fuzz/FuzzParseURL.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"redis+sentinel://u:pw@s1,s2:26380,[::1]/2?master=m&wait=1&wait_timeout=1s",
		"redis://:pw@a:7000,b,c?cluster=true",
		"rediss://u:pw@h:6380/1?read_timeout=3s",
		"redis://u:pw@a,,b?cluster=true",
		"redis+sentinel://s1?master=m&sentinel_password=pw",
	} {
		f.Add(s, "Secr3tPw")
	}
	f.Fuzz(func(t *testing.T, raw, pw string) {
		if len(pw) < 4 || strings.ContainsAny(pw, "@/?#&=:%,[]") {
			return
		}
		raw = strings.ReplaceAll(raw, "pw", pw)
		_, err := parseURL(raw)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("%v: not ErrInvalidInput", err)
		}
		_, rest, _ := strings.Cut(raw, "://")
		auth, tail := splitAuthority(rest)
		inUserinfo := strings.Contains(auth[:max(strings.LastIndexByte(auth, '@'), 0)], ":"+pw)
		inParam := strings.Contains(tail, "password="+pw)
		// A password that also stands elsewhere (as a host name) may show there.
		once := strings.Count(raw, pw) == 1
		if once && (inUserinfo || inParam) && strings.Contains(err.Error(), pw) {
			t.Fatalf("error shows the password %q: %v", pw, err)
		}
	})
}

// TestOpenWaitTimeoutReadTimeout: a WAIT the read would cut off is refused
// in the URL's words (wait_timeout=, read_timeout=), not Options' names;
// raising read_timeout= makes the same wait_timeout good. Open connects to
// nothing, so no server is needed.
func TestOpenWaitTimeoutReadTimeout(t *testing.T) {
	for _, u := range []string{
		"redis://u:Zq7-secret@h?wait=1&wait_timeout=5s",
		"redis://u:Zq7-secret@h?wait=1&wait_timeout=2s&read_timeout=2s",
		"redis://u:Zq7-secret@a,b?cluster=true&wait=1&wait_timeout=10s",
	} {
		_, err := Open(u, nil)
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "read_timeout") || !strings.Contains(err.Error(), "wait_timeout=") ||
			strings.Contains(err.Error(), "ReplicaTimeout") || strings.Contains(err.Error(), "Zq7-secret") {
			t.Errorf("%s: %v; want ErrInvalidInput naming wait_timeout= and read_timeout=, without the password", u, err)
		}
	}
	b, err := Open("redis://h?wait=1&wait_timeout=5s&read_timeout=6s", nil)
	if err != nil {
		t.Fatalf("wait_timeout below read_timeout: %v", err)
	}
	_ = b.Close(t.Context())
}
