package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/anarchon/anarchon"
)

// reloadResult is what a reload changed.
type reloadResult struct {
	Added, Removed, Changed []string
}

// reload re-reads the job files and applies the difference to the running
// scheduler: new jobs are added, jobs no longer defined are removed
// (their running commands finish), and jobs whose schedule, zone, command
// or options changed are updated in place (the scheduler runs no slot
// twice across the change). Files that do not parse, or jobs the store
// refuses, reject the whole reload with every error, and the running set
// is kept. @reboot jobs run at start only: a change to them is reported
// and applies at the next start.
func (d *daemon) reloadFrom(src sources) (reloadResult, error) {
	d.reload.Lock()
	defer d.reload.Unlock()
	jobs, all, _ := src.load()
	errs, warns := splitWarnings(all)
	if len(errs) > 0 {
		return reloadResult{}, joinErrors(errs)
	}
	if len(jobs) == 0 {
		return reloadResult{}, errNoJobs
	}
	// Check the new set against the store as a start would, on
	// schedulers that are never started.
	quiet := slog.New(slog.DiscardHandler)
	vs := anarchon.New(d.backend, &anarchon.Options{InstanceID: d.instance, Logger: quiet, RegistryTTL: -1})
	vr := anarchon.New(d.backend, &anarchon.Options{InstanceID: d.instance, Logger: quiet, RegistryTTL: -1})
	errs, late := splitWarnings(register(vs, vr, jobs, d.exec.handler))
	if len(errs) > 0 {
		return reloadResult{}, joinErrors(errs)
	}
	// A one-off job whose time has passed is a warning and is left out;
	// the other jobs are applied.
	warns = append(warns, late...)
	jobs = withoutUnscheduled(jobs, late)
	for _, w := range warns {
		d.log.Warn(w.Error())
	}

	old := map[string]*jobSpec{}
	for _, j := range d.jobList() {
		old[j.Name] = j
	}
	var res reloadResult
	var applyErrs []error
	seen := map[string]bool{}
	for _, j := range jobs {
		seen[j.Name] = true
		o := old[j.Name]
		switch {
		case o == nil && j.Reboot:
			d.log.Info("job added: @reboot jobs run at the next start", slog.String("job", j.Name))
		case o == nil:
			if err := d.sched.Add(jobOf(j, d.exec.handler)); err != nil {
				applyErrs = append(applyErrs, fmt.Errorf("add %q: %w", j.Name, err))
				continue
			}
			res.Added = append(res.Added, j.Name)
		case o.Reboot || j.Reboot:
			if material(o) != material(j) {
				d.log.Warn("job changed: @reboot jobs change at the next start", slog.String("job", j.Name))
			}
		case material(o) != material(j):
			if err := d.sched.Update(jobOf(j, d.exec.handler)); err != nil {
				applyErrs = append(applyErrs, fmt.Errorf("update %q: %w", j.Name, err))
				continue
			}
			res.Changed = append(res.Changed, j.Name)
		}
	}
	for name, o := range old {
		if seen[name] || o.Reboot {
			continue
		}
		if err := d.sched.Remove(name, nil); err != nil {
			applyErrs = append(applyErrs, fmt.Errorf("remove %q: %w", name, err))
			continue
		}
		res.Removed = append(res.Removed, name)
	}
	slices.Sort(res.Removed)
	d.metrics.initJobs(jobs)
	d.jobsMu.Lock()
	d.jobs = jobs
	d.jobsMu.Unlock()
	return res, errors.Join(applyErrs...)
}

// jobOf is the scheduler's job for a spec, as register builds it.
func jobOf(j *jobSpec, handler func(*jobSpec) anarchon.Handler) anarchon.Job {
	opts := j.Options
	opts.Zone = j.Zone
	opts.Fingerprint = fingerprintMaterial(j)
	return anarchon.Job{Name: j.Name, Schedule: anarchon.CronSchedule(j.Schedule), Handler: handler(j), Options: &opts}
}

// material is what decides whether a reload changes a job: everything
// that reaches the scheduler or the command.
func material(j *jobSpec) string {
	return fmt.Sprintf("%q %q %v %q %+v", j.Schedule, j.Zone, j.Reboot, fingerprintMaterial(j), j.Options)
}

// logReload logs a reload's outcome, one line per job the scheduler
// changed (the scheduler's own "job added/removed/changed" lines) and a
// summary, or the errors that rejected it.
func (d *daemon) logReload(why string, res reloadResult, err error) {
	if err != nil && len(res.Added)+len(res.Removed)+len(res.Changed) == 0 {
		d.log.Error("reload rejected: the running jobs are kept", slog.String("trigger", why), slog.Any("error", err))
		return
	}
	if err != nil {
		d.log.Error("reload partly applied", slog.String("trigger", why), slog.Any("error", err))
	}
	d.log.Info("reloaded", slog.String("trigger", why), slog.Int("added", len(res.Added)),
		slog.Int("removed", len(res.Removed)), slog.Int("changed", len(res.Changed)))
}

// fingerprintFiles hashes the contents of the job files and directories
// of src, for --watch: a file edited, added to a --crontab-dir or removed
// changes it.
func fingerprintFiles(src sources) string {
	h := sha256.New()
	add := func(path string) {
		fmt.Fprintf(h, "%s\x00", path)
		if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
			// A FIFO or a device would block the read, or drain it: its
			// type stands for its contents.
			fmt.Fprintf(h, "type %v\x00", st.Mode().Type())
			return
		}
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintf(h, "error %v\x00", err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(h, f)
	}
	for _, p := range src.Crontabs {
		add(p)
	}
	for _, p := range src.Configs {
		add(p)
	}
	for _, dir := range src.CrontabDirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			fmt.Fprintf(h, "dir %s error %v\x00", dir, err)
			continue
		}
		for _, e := range entries {
			if e.Type()&fs.ModeDir == 0 {
				add(filepath.Join(dir, e.Name()))
			}
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// watchFiles reloads when the job files' contents change, checking every
// interval until ctx ends.
func (d *daemon) watchFiles(ctx context.Context, src sources, interval time.Duration) {
	last := fingerprintFiles(src)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fp := fingerprintFiles(src)
		if fp == last {
			continue
		}
		last = fp
		res, err := d.reloadFrom(src)
		d.logReload("files changed", res, err)
	}
}
