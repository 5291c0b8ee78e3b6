package anarchon

import (
	"testing"

	"github.com/anarchon/anarchon/internal/runner"
)

// The run path spells statuses and outcome kinds as anarchon does; the
// host converts them by value.
func TestRunnerSpellsAsAnarchon(t *testing.T) {
	for rs, want := range map[runner.Status]Status{
		runner.StatusError: StatusError, runner.StatusLeaseLost: StatusLeaseLost, runner.StatusHandedOver: StatusHandedOver,
		runner.StatusUnconfirmed: StatusUnconfirmed, runner.StatusAbandoned: StatusAbandoned,
		runner.StatusMissed: StatusMissed, runner.StatusSkipped: StatusSkipped,
	} {
		if Status(rs) != want {
			t.Errorf("runner status %q, anarchon %q", rs, want)
		}
	}
	for rk, want := range map[runner.Kind]OutcomeKind{
		runner.KindWon: OutcomeWon, runner.KindRunning: OutcomeRunning, runner.KindDone: OutcomeDone,
		runner.KindOverlap: OutcomeOverlap, runner.KindNone: OutcomeNone, runner.KindLate: OutcomeLate,
	} {
		if OutcomeKind(rk) != want {
			t.Errorf("runner kind %d, anarchon %v", rk, want)
		}
	}
	if runner.AbandonedToken(1234) != AbandonedToken(1234) {
		t.Error("AbandonedToken differs")
	}
}
