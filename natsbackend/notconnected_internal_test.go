package natsbackend

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNotConnectedNamesSilentPort checks what Init says of a connection
// that is not up: a read timeout from a port that accepted the
// connection (a real one, from a listener that never writes, as a
// monitoring port never sends NATS's INFO line) gets the client-port hint,
// a refused connection and the absence of any error do not.
func TestNotConnectedNamesSilentPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer func() { (<-accepted).Close() }()
	if err := c.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	_, timeout := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(timeout, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a timeout", timeout)
	}
	const hint = "is it the server's client port"
	for _, tc := range []struct {
		name      string
		last      error
		dial      error
		want      string
		wantsHint bool
	}{
		{"nothing yet", nil, nil, "no server answered yet: the first connection attempt is still under way", false},
		{"silent port, last error", timeout, nil, timeout.Error(), true},
		{"silent port, failed attempt", nil, timeout, timeout.Error(), true},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, nil, "connection refused", false},
		{"last error first", errors.New("nats: authorization violation"), timeout, "authorization violation", false},
	} {
		var dial *error
		if tc.dial != nil {
			dial = &tc.dial
		}
		got := notConnected(tc.last, dial)
		if !strings.Contains(got, tc.want) || strings.Contains(got, hint) != tc.wantsHint {
			t.Errorf("%s: %q, want it to contain %q (hint: %v)", tc.name, got, tc.want, tc.wantsHint)
		}
	}
}

// TestOpenNamesSilentPort checks Open's error for a port that accepts the
// connection and never sends NATS's INFO line (as a monitoring port
// does): it names the client port, and keeps nats.go's timeout reachable.
func TestOpenNamesSilentPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // open until the listener closes, silent
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	b, err := Open("nats://"+ln.Addr().String(), &Options{Timeout: 500 * time.Millisecond})
	if err == nil {
		b.Close(t.Context())
		t.Fatal("Open on a silent port succeeded")
	}
	var ne net.Error
	if !strings.Contains(err.Error(), "is it the server's client port") || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Open: %v, want the client-port hint and a net.Error timeout", err)
	}
}
