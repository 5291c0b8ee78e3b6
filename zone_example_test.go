package anarchon_test

import (
	"fmt"
	"time"

	"github.com/anarchon/anarchon"
)

// Zones come from anarchon's own copy of the tz database, so this prints the
// same on every host, whatever tzdata it has installed.
func ExampleLoadLocation() {
	loc, err := anarchon.LoadLocation("America/Tijuana")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(time.Date(1970, 4, 26, 12, 0, 0, 0, loc).Format(time.RFC3339))
	// Output: 1970-04-26T12:00:00-07:00
}
