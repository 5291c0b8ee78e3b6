// Package tools holds the programs the release scripts run; it is its own
// module so that golang.org/x/mod stays out of the published modules, and
// it is never published itself.
package tools
