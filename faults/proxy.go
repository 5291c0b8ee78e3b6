package faults

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Mode is what a [Proxy] does to the traffic it carries.
type Mode int

// Proxy modes.
const (
	// Pass forwards bytes as they come.
	Pass Mode = iota
	// Delay holds every chunk of bytes for the proxy's delay before
	// forwarding it, in both directions (a slow network).
	Delay
	// Cut resets every open connection and refuses new ones at once (a
	// store that went away, or a firewall sending RSTs).
	Cut
	// Blackhole forwards nothing and answers nothing: open connections and
	// new ones stall, as on a network partition that drops packets. Bytes
	// held while the mode lasts are delivered when it ends, as TCP
	// retransmission would.
	Blackhole
)

// String returns the mode's lower-case name.
func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Delay:
		return "delay"
	case Cut:
		return "cut"
	case Blackhole:
		return "blackhole"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// Proxy is a TCP proxy on a loopback port in front of a store. Its mode
// can be changed at any time to delay, cut or black-hole the connections
// that go through it. It is safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	mode    Mode
	delay   time.Duration
	changed chan struct{} // closed and replaced on every mode change
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// NewProxy listens on a free port of 127.0.0.1 and forwards every
// connection to target (host:port), in mode Pass.
func NewProxy(target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("faults: proxy target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faults: proxy listen: %w", err)
	}
	p := &Proxy{ln: ln, target: target, changed: make(chan struct{}), conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Set switches the proxy to mode; delay is used by Delay only. Switching to
// Cut resets every open connection.
func (p *Proxy) Set(mode Mode, delay time.Duration) {
	p.mu.Lock()
	p.mode, p.delay = mode, delay
	close(p.changed)
	p.changed = make(chan struct{})
	var cut []net.Conn
	if mode == Cut {
		for c := range p.conns {
			cut = append(cut, c)
		}
	}
	p.mu.Unlock()
	for _, c := range cut {
		reset(c)
	}
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
	return err
}

// reset closes c with an RST rather than a FIN, where it can.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// gate waits while the proxy black-holes traffic, then returns the mode and
// delay to apply; ok is false when the connection must be dropped.
func (p *Proxy) gate() (mode Mode, delay time.Duration, ok bool) {
	for {
		p.mu.Lock()
		mode, delay, ch, closed := p.mode, p.delay, p.changed, p.closed
		p.mu.Unlock()
		if closed || mode == Cut {
			return mode, delay, false
		}
		if mode != Blackhole {
			return mode, delay, true
		}
		<-ch
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.untrack(c)
	if _, _, ok := p.gate(); !ok {
		reset(c)
		return
	}
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		reset(c)
		return
	}
	if !p.track(s) {
		s.Close()
		c.Close()
		return
	}
	defer p.untrack(s)
	done := make(chan struct{}, 2)
	go func() { p.pipe(s, c); done <- struct{}{} }()
	go func() { p.pipe(c, s); done <- struct{}{} }()
	<-done
	// One side ended: end both, so the other pipe returns.
	reset(c)
	reset(s)
	<-done
}

// chunk is bytes read from one side, with the time they arrived.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies src to dst chunk by chunk, applying the mode to each chunk.
// A reader goroutine stamps each chunk with its arrival, so that Delay is
// latency (every chunk leaves d after it came in, and chunks in flight
// overlap) rather than a serial slowdown that would grow with the number
// of writes a request takes.
func (p *Proxy) pipe(dst, src net.Conn) {
	ch := make(chan chunk, 64)
	quit := make(chan struct{})
	defer close(quit) // the reader ends when serve closes src, or here
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32*1024)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case ch <- chunk{b: buf[:n], at: time.Now()}:
				case <-quit:
					return
				}
			}
			if err != nil { // io.EOF or a reset: the connection is over
				return
			}
		}
	}()
	for c := range ch {
		mode, delay, ok := p.gate()
		if !ok {
			return
		}
		if mode == Delay && delay > 0 {
			if wait := time.Until(c.at.Add(delay)); wait > 0 {
				time.Sleep(wait) // the fault itself: a slow link
			}
		}
		if _, err := dst.Write(c.b); err != nil {
			return
		}
	}
}
