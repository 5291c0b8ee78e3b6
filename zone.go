package anarchon

import (
	"time"

	"github.com/anarchon/anarchon/internal/tz"
)

// LoadLocation returns the time zone with the given IANA name (e.g.
// "Europe/Athens") from the tz database embedded in anarchon, release
// [TZDataVersion], whatever the host has installed: instances on hosts with
// different tzdata versions compute the same slots (SPEC §3). Neither
// $ZONEINFO nor the host's zoneinfo files are read. As for
// [time.LoadLocation], "" and "UTC" give [time.UTC] and "Local" gives
// [time.Local] (which the scheduler refuses as a job's Zone). An unknown name
// returns an error; the scheduler reports it as [CodeUnknownZone].
//
// Cron jobs' zones are loaded with it unless [Options.HostZoneinfo] is set.
func LoadLocation(name string) (*time.Location, error) { return tz.Load(name) }

// TZDataVersion returns the IANA tzdata release of the database that
// [LoadLocation] reads, e.g. "2025c". Instances that report different
// versions may compute different slots for zones the releases disagree on.
func TZDataVersion() string { return tz.Version }

// loadLocation loads a job's zone from the database the scheduler's options
// choose: the embedded one by default, or with HostZoneinfo the host's
// ($ZONEINFO, then the system's files, as time.LoadLocation reads them),
// falling back to the embedded one for a zone the host lacks.
func (s *Scheduler) loadLocation(name string) (*time.Location, error) {
	if s.opts.HostZoneinfo {
		if l, err := time.LoadLocation(name); err == nil {
			return l, nil
		}
	}
	return LoadLocation(name)
}
