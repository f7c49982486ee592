package history

import "github.com/redstate/redstate"

// Config is the statistics history's configuration (the stats.history section).
type Config struct {
	// Enabled turns the history on (default true); off, nothing is recorded and the stats
	// routes answer 404.
	Enabled bool `koanf:"enabled"`
	// MaxSeries bounds the series one process writes (Options.MaxSeries; default
	// DefaultMaxSeries).
	MaxSeries int `koanf:"max-series"`
}

// DefaultConfig is the history on, with DefaultMaxSeries.
func DefaultConfig() Config { return Config{Enabled: true, MaxSeries: DefaultMaxSeries} }

// Validate checks the configuration. Errors: EINVALID.
func (c Config) Validate() error {
	if c.MaxSeries < 0 {
		return redstate.Errorf(redstate.EINVALID, "stats.history.max-series must not be negative, got %d", c.MaxSeries)
	}
	return nil
}
