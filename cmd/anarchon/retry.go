package main

import (
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/anarchon/anarchon"
	"go.yaml.in/yaml/v3"
)

// decodeRetry reads a job's retry mapping:
//
//	retry:
//	  max_retries: 3          # runs of a failed slot after the first; 0: none
//	  initial_backoff: 10s    # wait before the first retry (default 1s)
//	  max_backoff: 5m         # cap of the wait (default 5m)
//	  multiplier: 2           # growth of the wait per retry (default 2)
//	  jitter: 1s              # up to this much more per wait (default 0)
//	  permanent_exit_codes: [2, 64]  # exit codes that are not retried
//
// A command that exits with one of permanent_exit_codes fails its slot at
// once (the error is marked anarchon.Permanent), as a Kubernetes
// podFailurePolicy rule with action FailJob would; every other failure is
// retried while max_retries allows.
func decodeRetry(j *jobSpec, v *yaml.Node, fail func(line int, format string, args ...any)) {
	if v.Kind != yaml.MappingNode {
		fail(v.Line, "retry: want a mapping with max_retries, initial_backoff, max_backoff, multiplier, jitter, permanent_exit_codes")
		return
	}
	r := &j.Options.Retry
	seen := map[string]bool{}
	for c := 0; c+1 < len(v.Content); c += 2 {
		k, val := v.Content[c], v.Content[c+1]
		if seen[k.Value] {
			fail(k.Line, "retry: key %q repeated", k.Value)
			continue
		}
		seen[k.Value] = true
		dur := func(set *time.Duration) {
			d, err := durationOf("retry."+k.Value, val.Value)
			if err != nil || val.Kind != yaml.ScalarNode {
				fail(val.Line, "retry.%s: %q is not a Go duration (like 30s, 5m, 1h30m)", k.Value, val.Value)
				return
			}
			*set = d
		}
		switch k.Value {
		case "max_retries":
			x, err := strconv.Atoi(val.Value)
			if err != nil || val.Kind != yaml.ScalarNode {
				fail(val.Line, "retry.max_retries: %q is not a whole number", val.Value)
				continue
			}
			r.MaxRetries = x
		case "initial_backoff":
			dur(&r.InitialBackoff)
		case "max_backoff":
			dur(&r.MaxBackoff)
		case "jitter":
			dur(&r.Jitter)
		case "multiplier":
			x, err := strconv.ParseFloat(val.Value, 64)
			if err != nil || val.Kind != yaml.ScalarNode {
				fail(val.Line, "retry.multiplier: %q is not a number", val.Value)
				continue
			}
			r.Multiplier = x
		case "permanent_exit_codes":
			if val.Kind != yaml.SequenceNode {
				fail(val.Line, "retry.permanent_exit_codes: want a list of exit codes")
				continue
			}
			for _, e := range val.Content {
				x, err := strconv.Atoi(e.Value)
				if err != nil || e.Kind != yaml.ScalarNode || x < 1 || x > 255 {
					fail(e.Line, "retry.permanent_exit_codes: %q is not an exit code from 1 to 255", e.Value)
					continue
				}
				j.PermanentExit = append(j.PermanentExit, x)
			}
		default:
			fail(k.Line, "retry: unknown key %q (want max_retries, initial_backoff, max_backoff, multiplier, jitter, permanent_exit_codes)", k.Value)
		}
	}
}

// commandExitError returns the error of a command that exited with ee: marked
// anarchon.Permanent (not retried) when its code is one of the job's
// permanent exit codes.
func commandExitError(j *jobSpec, ee *exec.ExitError) error {
	if slices.Contains(j.PermanentExit, ee.ExitCode()) {
		return anarchon.Permanent(ee)
	}
	return ee
}
