package main

import (
	"os"

	_ "time/tzdata" // every instance computes the same slots, whatever the host's tz database
)

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}
