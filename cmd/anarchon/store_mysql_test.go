package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/anarchon/anarchon"
	"github.com/go-sql-driver/mysql"
)

func TestOpenStoreMySQLNoDatabase(t *testing.T) {
	_, err := openStore("mysql://u:s3cr3t@localhost")
	var se *StoreURLError
	if !errors.As(err, &se) || se.Code != StoreOpenFailed || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("err = %v", err)
	}
}

// TestOpenStoreMySQL opens the test server (ANARCHON_TEST_MYSQL_DSN, from
// scripts/services/mysql.sh) through a mysql:// URL and claims a slot.
func TestOpenStoreMySQL(t *testing.T) {
	dsn := os.Getenv("ANARCHON_TEST_MYSQL_DSN")
	if dsn == "" {
		msg := "ANARCHON_TEST_MYSQL_DSN is not set: start a server with scripts/services/mysql.sh and export its output"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u := "mysql://" + cfg.User + ":" + cfg.Passwd + "@" + cfg.Addr + "/" + cfg.DBName + "?prefix=daemon_t_&timeout=5s"
	b, err := openStore(u)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer b.Close(ctx)
	if b.Name() != "mysql" {
		t.Errorf("Name() = %q", b.Name())
	}
	slot := int64(os.Getpid())
	ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: "daemon-store", Slot: slot, Token: "a", InstanceID: "a"})
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	ok, err = b.Claim(ctx, anarchon.ClaimInput{Job: "daemon-store", Slot: slot, Token: "b", InstanceID: "b"})
	if err != nil || ok {
		t.Fatalf("second claim: %v %v", ok, err)
	}
}
