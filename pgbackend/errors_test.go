package pgbackend_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/pgbackend"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sqlState is an error with an SQLSTATE, as pgconn.PgError.
type sqlState string

func (s sqlState) Error() string    { return "ERROR (SQLSTATE " + string(s) + ")" }
func (s sqlState) SQLState() string { return string(s) }

func TestIsPermanentClasses(t *testing.T) {
	for code, want := range map[string]bool{
		"42P01": true, "42601": true, "42501": true, "42883": true, // undefined table, syntax, privilege, undefined function
		"22001": true, "22P02": true, "23502": true, "23505": true, "28P01": true, "3D000": true, "3F000": true, "0A000": true,
		"08006": false, "08001": false, "40001": false, "40P01": false, "53300": false, "53100": false,
		"57P01": false, "57P02": false, "57P03": false, "57014": false, "55P03": false, "XX000": false, "": false,
	} {
		err := fmt.Errorf("wrapped: %w", sqlState(code))
		if got := pgbackend.IsPermanent(err); got != want {
			t.Errorf("IsPermanent(SQLSTATE %q) = %v, want %v", code, got, want)
		}
	}
	for _, err := range []error{context.Canceled, context.DeadlineExceeded, &net.OpError{Op: "dial", Err: errors.New("connection refused")}} {
		if pgbackend.IsPermanent(err) {
			t.Errorf("IsPermanent(%v) = true, want false", err)
		}
	}
}

// TestErrorClasses: errors from a real server are marked
// anarchon.Permanent when a retry cannot fix them (a dropped table, bad
// input, a closed backend), and not when it may (a cancelled context, an
// unreachable server).
func TestErrorClasses(t *testing.T) {
	u := serverURL(t)
	ctx := t.Context()
	schema := freshSchema(t)
	b := open(t, 1, 2, schema)[0]
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	job := "classes"
	if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, permanent bool) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		if anarchon.IsPermanent(err) != permanent {
			t.Errorf("%s: %v: permanent %v, want %v", what, err, anarchon.IsPermanent(err), permanent)
		}
	}
	in := anarchon.ClaimInput{Job: job, Slot: 1000, Token: "t", InstanceID: "i"}

	_, err := b.Claim(ctx, anarchon.ClaimInput{Job: "", Slot: 1000, Token: "t"})
	check("Claim with an empty job name", err, true)
	_, err = b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: in, Lease: -time.Second})
	check("RunStore.Claim with a negative lease", err, true)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = b.Claim(cancelled, in)
	check("Claim on a cancelled context", err, false)

	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, table := range []string{"results", "runs"} {
		if _, err := pool.Exec(ctx, `DROP TABLE "`+schema+`"."anarchon_`+table+`"`); err != nil {
			t.Fatal(err)
		}
	}
	err = b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{Slot: 1000, Token: "t", Status: anarchon.StatusSuccess}, HistorySize: 10})
	check("SaveResult after the results table was dropped", err, true)
	_, err = b.Claim(ctx, in)
	check("Claim after the runs table was dropped", err, true)
	_, err = b.History(ctx, job, 0)
	check("History after the tables were dropped", err, true)
	_, err = b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: in, Lease: time.Minute})
	check("RunStore.Claim after the runs table was dropped", err, true)

	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = b.Claim(ctx, in)
	check("Claim after Close", err, true)

	// Nothing listens on a port just closed: the server may come back.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	down, err := pgbackend.Open(ctx, "postgres://anarchon:anarchon@"+addr+"/anarchon?sslmode=disable&connect_timeout=2", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close(ctx)
	check("Init against a server that is down", down.Init(ctx), false)
}
