//go:build !soak

package e2e

// indexRows is the size of the table TestIndexPostgres_BackfillKillRestartVerify backfills
// while writes go on: 20,000 in `make test` (a loaded machine), 100,000 in `make soak`.
const indexRows = 20000
