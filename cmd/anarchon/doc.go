// Command anarchon is high-availability cron: run it on any number of
// machines with the same crontab (or YAML job file) and the same store, and
// each scheduled run of each job happens exactly once, on one of them. There
// is no leader: before running a job for a slot, every instance claims
// (job, slot) in the shared store and exactly one wins (SPEC §2).
//
//	anarchon run --crontab /etc/anarchon/crontab --store sqlite:/var/lib/anarchon/anarchon.db
//
// # Commands
//
//   - run: schedule the jobs until SIGTERM or SIGINT; --http serves
//     /healthz, /readyz, /metrics (Prometheus) and /status.
//   - history JOB [-n N] [--json]: a job's recent runs from every instance.
//   - run-now JOB: run a job here, now, and record it (never deduplicated).
//   - pause JOB [--reason R], resume JOB [--catch-up]: pause or resume a job
//     on every replica, through the store.
//   - trigger JOB [--key K] [--timeout D]: run a job once on a live replica,
//     wait for it, print where it ran, exit with its status.
//   - status [--json]: the replicas in the store's instance registry, the
//     paused jobs (who, when, why) and the jobs that differ between live ones; with job files, each job's next
//     slots, active leases (with their holder's state) and last result.
//   - next EXPR|JOB [--zone Z] [--after T] [-n N]: fire times of a cron
//     expression, or of a job of --crontab or --config by its name.
//   - validate: every mistake in the job files as FILE:LINE: reason; exit 1 if any.
//   - version.
//
// # Stores
//
// --store takes a URL: sqlite:PATH (the default, sqlite:./anarchon.db),
// postgres://…, redis://… (rediss:// for TLS; redis+sentinel://s1,s2,s3/?master=NAME
// for Sentinel, redis://a,b,c?cluster=true for Redis Cluster, wait=N to make
// each claim wait for N replicas), mysql://… (MySQL 8, MariaDB 10.11+), nats://… or memory: (one
// process only). A "prefix" query parameter sets the table or key prefix
// (the bucket name on NATS). Each scheme is opened by one small file
// (store_<name>.go) that registers itself; a scheme whose backend is not in
// the build is refused with the code backend_unavailable. Errors never show
// a password. PostgreSQL takes several hosts with
// target_session_attrs=read-write (postgres://u:p@db1:5432,db2:5432/db?
// target_session_attrs=read-write) to follow a failover; the start-up
// summary and /status show the replication pgbackend found.
//
// # Jobs
//
// A crontab line is 5 time fields, 6 (a leading seconds field, or a
// trailing year with --six-fields year), 7 (seconds … year; the year must
// be *), or a descriptor (@daily, @every 10s, @reboot), then in a system
// crontab (--format system, or detected for /etc/crontab, /etc/cron.d and
// --crontab-dir) a user name, then a shell command run with $SHELL -c
// (/bin/sh unless a SHELL= line says otherwise). A job of a system crontab
// runs as its user when the daemon is root (runas_unix.go); otherwise a
// line for another user is an error at validate and at start. Steps larger
// than a field's range (*/60) are rewritten to the range's start, as cron
// reads them. @reboot jobs run once per start of "anarchon run", on each
// replica, as manual runs. MAILTO= is accepted with a warning.
//
// A "# name: NAME" comment directly above names the job; otherwise its name
// is "job-" and the first 12 hex digits of the SHA-256 of the schedule, a
// NUL byte and the command, so every replica derives the same name; validate
// warns about such lines, whose name changes with any edit.
// NAME=value lines set the environment of the jobs after them; CRON_TZ sets
// their zone, TZ their zone and their TZ variable. In a command, an
// unescaped % starts the command's standard input (further ones are
// newlines) and \% is a literal %, as in Vixie cron.
//
// The YAML file is a list of jobs (or a mapping whose only key is "jobs"),
// each with name, schedule (or at, an RFC 3339 time, for a one-off job
// that runs once across the replicas; one whose time is past its max_late
// when the file is loaded is reported as a warning and not scheduled),
// zone, command (an argv list) or shell (a string
// for sh -c), env, workdir, timeout, jitter, max_late, overlap (skip,
// allow, buffer_one, replace or "limit N"), catch_up {window, max}, lease, max_attempts, history_size and
// retry {max_retries, initial_backoff, max_backoff, multiplier, jitter,
// permanent_exit_codes}. Durations are Go durations ("30s"). Unknown keys
// are errors.
//
// A failed command is run again, as a further attempt of the same slot on
// whichever replica claims it, while retry.max_retries allows; a command
// that exits with one of retry.permanent_exit_codes is not retried (its
// error is marked anarchon.Permanent), like a Kubernetes podFailurePolicy
// rule with action FailJob.
//
// # Processes
//
// Each run is a child process in its own process group, with the daemon's
// environment, the job's variables and ANARCHON_JOB, ANARCHON_SLOT (RFC 3339
// in UTC, fractional seconds only when not zero), ANARCHON_ATTEMPT,
// ANARCHON_FENCE, ANARCHON_INSTANCE and ANARCHON_MANUAL. Its output is logged line by line;
// the last 4 KiB go into the run's history record. A non-zero exit status is
// an error "exit status N". A timeout, a lost lease or the stop deadline
// sends SIGTERM to the whole group, then SIGKILL after --kill-grace.
//
// Every run end is logged (outcome.go): INFO on success, WARN with the exit
// code or signal and the last output lines on failure; takeovers and
// skipped slots get a line too. As PID 1, or with --subreaper, the daemon
// reaps orphaned processes (reaper_linux.go) without waiting for its own
// commands, whose statuses exec.Cmd.Wait must get.
//
// Every flag can also be set with an ANARCHON_* environment variable
// (ANARCHON_STORE for --store, or --store-file); the command line wins.
// Store URLs are shown only through the redactor (redact.go): errors, the
// summary, /status and every log record. Jobs do not inherit the store's
// credential variables unless --pass-secrets; --http beyond loopback
// without --http-token-file or ANARCHON_UI_TOKEN keeps /healthz and /readyz
// open for probes and answers 403 on /status, /metrics and /ui/ (with a
// WARN at start); /status omits output tails unless --status-output.
// --http-token-file or --status-output without --http is a usage error,
// not a setting silently dropped. Usage errors exit
// with status 2 (a --store URL that does not parse, names no store or has
// a parameter the store does not take among them); run-now exits with the
// job's own status.
//
// # Replicas
//
// "anarchon run" registers the instance in the store's instance registry
// (SPEC §10), renewed every --registry-ttl/3, with a fingerprint of each
// job. The library's fingerprint covers the name, schedule, zone and claim
// options; the daemon adds, as JobOptions.Fingerprint, what it runs: the
// argv (or shell and line), the % input, env, workdir, user and timeout
// (replicas.go). status, /status and /metrics (anarchon_instances,
// anarchon_job_set_mismatch, anarchon_job_set_differs) read the registry
// and compare the live instances' job sets with anarchon.DiffJobSets; the
// scheduler itself logs a WARN per differing instance. @reboot jobs are not
// fingerprinted.
//
// # Signals
//
// SIGHUP re-reads the job files, checks them, and applies the difference
// (jobs added, removed, changed) without a restart; a file with a mistake
// is rejected with its errors and the running jobs are kept. run --watch
// INTERVAL does the same when the files' contents change.
//
// SIGTERM or SIGINT stops scheduling and waits up to --stop-timeout for
// running jobs; jobs still running then are stopped and, on a store with
// leases, handed over to another instance, which runs the slot again as
// attempt 2. The exit status is then 0. A second signal exits at once with
// status 128+signal. A signal to the daemon's whole process group (Ctrl-C)
// that kills a command's process before it ran anything (it was being
// started, still in the daemon's group) makes the daemon start it again, on
// Linux.
//
// # Dashboard and tracing
//
// --http also serves the dashboard at /ui/ (package anarchonui). It needs no
// credentials when --http listens on loopback only; on any other address
// it asks for the token (--http-token-file's, else ANARCHON_UI_TOKEN; a
// bearer token, or a basic-auth password) or ANARCHON_UI_USER and
// ANARCHON_UI_PASSWORD, and refuses every request
// with 403 while none is set. ANARCHON_UI_READONLY=1 hides its actions. With
// OTEL_EXPORTER_OTLP_ENDPOINT set, spans of every claim and run are
// exported over OTLP/HTTP (package otelanarchon).
//
// # Fault injection
//
// The environment variable ANARCHON_CLOCK_OFFSET (or the hidden flag
// --clock-offset), a Go duration, moves this instance's clock, to test that
// instances with skewed clocks still agree (they use the store's clock).
package main
