package green

import (
	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/scenario"
)

// This file: the participant allowlist at the request's door. The
// Messenger holds every call to ExecutorOptions.Messenger.Allow (a2acall's
// allow.go); the check here only turns a request that names a participant
// the list refuses outright into a bad request before any work is done.

// checkParticipantsAllowed rejects a request that names a participant the
// allowlist refuses outright: an address outside it, or a name it does not
// hold when it holds no address ranges. A name left to resolution is
// checked when it is called.
func checkParticipantsAllowed(allow *a2acall.AllowList, participants map[string]string) error {
	for _, role := range sortedKeys(participants) {
		if err := allow.CheckURL(participants[role]); err != nil {
			return scenario.BadRequest("participant %q: %v", role, err)
		}
	}
	return nil
}
