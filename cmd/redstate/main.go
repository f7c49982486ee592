// Command redstate serves Redis-backed state blocks over HTTP/JSON. It only wires the command
// line (package cli); see README.md and docs/configuration.md.
package main

import (
	"os"

	"github.com/redstate/redstate/cli"
)

func main() { os.Exit(cli.Execute()) }
