package faults_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/anarchon/anarchon/faults"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, msg string, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	line, err := r.ReadString('\n')
	return line, err
}

func TestProxyModes(t *testing.T) {
	p, err := faults.NewProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)

	if got, err := roundTrip(c, r, "pass", 5*time.Second); err != nil || got != "pass\n" {
		t.Fatalf("pass: %q, %v", got, err)
	}

	p.Set(faults.Delay, 100*time.Millisecond)
	start := time.Now()
	if got, err := roundTrip(c, r, "slow", 5*time.Second); err != nil || got != "slow\n" {
		t.Fatalf("delay: %q, %v", got, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("delay: round trip took %v, want at least 2×100ms", d)
	}

	p.Set(faults.Blackhole, 0)
	if got, err := roundTrip(c, r, "held", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackhole: got %q, %v; want a read timeout", got, err)
	}
	p.Set(faults.Pass, 0)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "held\n" {
		t.Fatalf("after blackhole: %q, %v; want the held line delivered", got, err)
	}

	p.Set(faults.Cut, 0)
	if _, err := roundTrip(c, r, "cut", 5*time.Second); err == nil {
		t.Fatal("cut: the open connection still answers")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		_, err = roundTrip(c2, bufio.NewReader(c2), "new", 5*time.Second)
		c2.Close()
	}
	if err == nil {
		t.Fatal("cut: a new connection is served")
	}

	p.Set(faults.Pass, 0)
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if got, err := roundTrip(c3, bufio.NewReader(c3), "back", 5*time.Second); err != nil || got != "back\n" {
		t.Fatalf("after cut: %q, %v", got, err)
	}
}

func TestProxyBadTarget(t *testing.T) {
	if _, err := faults.NewProxy("no-port"); err == nil {
		t.Fatal("NewProxy accepted a target without a port")
	}
}
