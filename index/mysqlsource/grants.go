package mysqlsource

import (
	"context"
	"regexp"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/sqldb"
)

// globalGrant matches a SHOW GRANTS line on *.* and captures its privilege list.
var globalGrant = regexp.MustCompile("^GRANT (.+) ON \\*\\.\\* TO ")

// checkReplicationGrant fails when the account's grants, as SHOW GRANTS lists them, lack
// REPLICATION SLAVE (REPLICATION REPLICA on MariaDB, or ALL PRIVILEGES) on *.*: without it the
// snapshot would run and the stream then fail. Grants that come through a role are not
// expanded by SHOW GRANTS, so an account with a role is given the benefit of the doubt (the
// stream's own error names the grant if it is missing).
func (s *Source) checkReplicationGrant(ctx context.Context) error {
	rows, err := s.opts.DB.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return sqldb.Map(err, "mysql source: SHOW GRANTS")
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return sqldb.Map(err, "mysql source: SHOW GRANTS")
		}
		lines = append(lines, line)
	}
	if err := rows.Err(); err != nil {
		return sqldb.Map(err, "mysql source: SHOW GRANTS")
	}
	if grantsReplication(lines) {
		return nil
	}
	return redstate.Errorf(redstate.EINVALID, "mysql source: the account cannot read the binary log as a replica: GRANT REPLICATION SLAVE ON *.* TO the account redstate connects as")
}

// grantsReplication reports whether SHOW GRANTS lines give REPLICATION SLAVE on *.*, or may
// give it through a role (a GRANT line without ON).
func grantsReplication(lines []string) bool {
	for _, line := range lines {
		up := strings.ToUpper(line)
		if !strings.Contains(up, " ON ") {
			return true // a role granted to the account: not expanded here
		}
		m := globalGrant.FindStringSubmatch(up)
		if m == nil {
			continue
		}
		for _, p := range strings.Split(m[1], ",") {
			switch strings.TrimSpace(p) {
			case "ALL PRIVILEGES", "REPLICATION SLAVE", "REPLICATION REPLICA":
				return true
			}
		}
	}
	return false
}

// checkCompression fails on MySQL when binlog_transaction_compression is on: the source reads
// row events, and a compressed transaction carries them inside one payload event it does not
// unpack. MariaDB's compressed row events are decoded by the replication library.
func (s *Source) checkCompression(ctx context.Context) error {
	if s.flavor != index.FlavorMySQL {
		return nil
	}
	var on int64
	if err := s.opts.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.binlog_transaction_compression").Scan(&on); err != nil {
		return nil // before MySQL 8.0.20 the setting does not exist: nothing is compressed
	}
	if on != 0 {
		return redstate.Errorf(redstate.EINVALID, "mysql source: binlog_transaction_compression is ON, which the source does not read: SET GLOBAL binlog_transaction_compression = OFF (and in the server's configuration)")
	}
	return nil
}
