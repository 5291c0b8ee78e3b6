// Package tz loads time zones from the copy of the IANA tz database that is
// embedded in anarchon, so that every instance computes the same slots
// whatever tz database its host has installed.
//
// The standard library offers no way to read the database that time/tzdata
// embeds: time.LoadLocation reads $ZONEINFO and the host's files first and
// uses the embedded copy only when they lack the zone. This package embeds
// the zone archive that Go distributes in $GOROOT/lib/time/zoneinfo.zip (the
// one time/tzdata is generated from) and reads it with
// time.LoadLocationFromTZData. scripts/update-tzdata.sh refreshes both the
// archive and [Version] from the Go toolchain in use.
package tz

import (
	"archive/zip"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

//go:embed zoneinfo.zip
var zipData string

var (
	indexOnce sync.Once
	index     map[string]*zip.File
	indexErr  error
	cache     sync.Map // name → *time.Location; a Location is immutable
)

func loadIndex() {
	r, err := zip.NewReader(strings.NewReader(zipData), int64(len(zipData)))
	if err != nil {
		indexErr = fmt.Errorf("tz: embedded zoneinfo.zip: %w", err)
		return
	}
	index = make(map[string]*zip.File, len(r.File))
	for _, f := range r.File {
		index[f.Name] = f
	}
}

// ErrUnknownZone is matched (through errors.Is) by the error Load returns
// for a name that is not in the embedded database.
var ErrUnknownZone = errors.New("unknown time zone")

// Load returns the zone with the given IANA name (e.g. "Europe/Athens") from
// the embedded database. As for time.LoadLocation, "" and "UTC" give
// time.UTC and "Local" gives time.Local, the host's own zone. Other names
// are looked up in the embedded database only; neither $ZONEINFO nor the
// host's files are read.
func Load(name string) (*time.Location, error) {
	switch name {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return time.Local, nil
	}
	if l, ok := cache.Load(name); ok {
		return l.(*time.Location), nil
	}
	indexOnce.Do(loadIndex)
	if indexErr != nil {
		return nil, indexErr
	}
	f, ok := index[name]
	if !ok {
		return nil, fmt.Errorf("%w %s", ErrUnknownZone, name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("tz: %s in the embedded database: %w", name, err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("tz: %s in the embedded database: %w", name, err)
	}
	l, err := time.LoadLocationFromTZData(name, data)
	if err != nil {
		return nil, fmt.Errorf("tz: %s in the embedded database: %w", name, err)
	}
	actual, _ := cache.LoadOrStore(name, l)
	return actual.(*time.Location), nil
}
