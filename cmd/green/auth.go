package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
)

// Authentication's flags and environment (docs/green-agent.md,
// "Authentication"). Tokens come from the environment or from files,
// never from a flag value, which every user of the machine sees in ps.

// envParticipantTokensFile names the default of --participant-tokens-file.
const envParticipantTokensFile = "COORDBENCH_PARTICIPANT_TOKENS_FILE"

// authFlags locate the tokens.
type authFlags struct {
	a2aTokenFile          string
	otlpTokenFile         string
	participantTokensFile string
}

// register adds the flags; withA2A adds --a2a-token-file (serve has an A2A
// endpoint, run does not).
func (f *authFlags) register(fs *flag.FlagSet, withA2A bool) {
	if withA2A {
		fs.StringVar(&f.a2aTokenFile, "a2a-token-file", os.Getenv(a2aserve.EnvA2ATokenFile),
			"file holding the token every A2A request must carry (default $"+a2aserve.EnvA2ATokenFile+"; or the token itself in $"+a2aserve.EnvA2AToken+"; none: open)")
	}
	fs.StringVar(&f.otlpTokenFile, "otlp-token-file", os.Getenv(a2aserve.EnvOTLPTokenFile),
		"file holding the token every OTLP export must carry (default $"+a2aserve.EnvOTLPTokenFile+"; or the token itself in $"+a2aserve.EnvOTLPToken+"; none: open)")
	fs.StringVar(&f.participantTokensFile, "participant-tokens-file", os.Getenv(envParticipantTokensFile),
		"file of credentials for participants that require them, one \"URL-prefix token\" a line (default $"+envParticipantTokensFile+")")
}

// authConfig is what the flags and the environment say.
type authConfig struct {
	a2aToken, otlpToken string
	participants        *a2acall.Credentials
}

// load reads the tokens and the participants' credentials.
func (f *authFlags) load(withA2A bool) (authConfig, error) {
	var c authConfig
	var err error
	if withA2A {
		if c.a2aToken, err = a2aserve.ReadToken(os.Getenv, a2aserve.EnvA2AToken, f.a2aTokenFile); err != nil {
			return c, fmt.Errorf("A2A token: %w", err)
		}
	}
	if c.otlpToken, err = a2aserve.ReadToken(os.Getenv, a2aserve.EnvOTLPToken, f.otlpTokenFile); err != nil {
		return c, fmt.Errorf("OTLP token: %w", err)
	}
	if c.participants, err = a2acall.LoadCredentials(f.participantTokensFile); err != nil {
		return c, fmt.Errorf("participant tokens: %w", err)
	}
	return c, nil
}
