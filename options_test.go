package anarchon_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// An Options field out of its range is refused by Start and by every Add,
// with the field's name and a code, instead of being taken for its
// default: a negative PollInterval, BatchSize or ClockSyncInterval, a
// nanosecond's poll (a busy loop against the store), and an InstanceID
// that prints as another one or breaks a log line.
func TestOptionsRefused(t *testing.T) {
	for _, c := range []struct {
		opts  anarchon.Options
		field string
		code  anarchon.Code
	}{
		{anarchon.Options{PollInterval: -time.Second}, "Options.PollInterval", anarchon.CodeNegativeDuration},
		{anarchon.Options{PollInterval: time.Nanosecond}, "Options.PollInterval", anarchon.CodeBadOption},
		{anarchon.Options{ClockSyncInterval: -1}, "Options.ClockSyncInterval", anarchon.CodeNegativeDuration},
		{anarchon.Options{ClockSyncInterval: time.Microsecond}, "Options.ClockSyncInterval", anarchon.CodeBadOption},
		{anarchon.Options{ClockSkewWarning: -time.Second}, "Options.ClockSkewWarning", anarchon.CodeNegativeDuration},
		{anarchon.Options{BatchSize: -5}, "Options.BatchSize", anarchon.CodeBadOption},
		{anarchon.Options{InstanceID: "a\nb"}, "Options.InstanceID", anarchon.CodeBadOption},
		{anarchon.Options{InstanceID: "   "}, "Options.InstanceID", anarchon.CodeBadOption},
		{anarchon.Options{InstanceID: " web-1"}, "Options.InstanceID", anarchon.CodeBadOption},
		{anarchon.Options{InstanceID: "web-1\t"}, "Options.InstanceID", anarchon.CodeBadOption},
		{anarchon.Options{InstanceID: "web\xff1"}, "Options.InstanceID", anarchon.CodeBadOption},
	} {
		c.opts.Logger = quiet
		s := anarchon.New(membackend.New(nil), &c.opts)
		var ve *anarchon.ValidationError
		err := s.Every("j", time.Second, noop, nil)
		if !errors.As(err, &ve) || ve.Field != c.field || ve.Code != c.code || ve.Job != "j" {
			t.Errorf("%+v: Every = %v, want %s (%s) for job j", c.opts, err, c.field, c.code)
		}
		err = s.Start(context.Background())
		if !errors.As(err, &ve) || ve.Field != c.field || ve.Code != c.code || ve.Job != "" {
			t.Errorf("%+v: Start = %v, want %s (%s)", c.opts, err, c.field, c.code)
			if err == nil {
				_ = s.Stop(context.Background())
			}
			continue
		}
		if msg := err.Error(); strings.Contains(msg, `job ""`) || !strings.HasPrefix(msg, "anarchon: "+c.field+": ") {
			t.Errorf("%+v: Start's error reads %q", c.opts, msg)
		}
	}
}

// What the fields' docs allow is accepted: zero for the default, a
// negative RegistryTTL to register no instance, blanks inside an ID.
func TestOptionsAccepted(t *testing.T) {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{
		Logger: quiet, InstanceID: "web-1 (eu)", RegistryTTL: -1, PollInterval: anarchon.MinPollInterval, BatchSize: 1,
	})
	if err := s.Every("j", time.Hour, noop, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet}); s.Every("j", time.Hour, noop, nil) != nil {
		t.Fatal("zero Options refused")
	}
}
