package mysqlsource

import "testing"

func TestGrantsReplication(t *testing.T) {
	cases := []struct {
		lines []string
		want  bool
	}{
		{[]string{"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `cdc`@`%`"}, true},
		{[]string{"GRANT USAGE ON *.* TO `cdc`@`%`", "GRANT ALL PRIVILEGES ON `app`.* TO `cdc`@`%`"}, false},
		{[]string{"GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"}, true},
		{[]string{"GRANT SELECT, BINLOG MONITOR ON *.* TO `cdc`@`%` IDENTIFIED BY PASSWORD '*X'"}, false},
		{[]string{"GRANT REPLICATION REPLICA ON *.* TO 'cdc'@'%'"}, true},
		{[]string{"GRANT USAGE ON *.* TO `cdc`@`%`", "GRANT `cdc_role`@`%` TO `cdc`@`%`"}, true}, // MySQL 8 role
		{[]string{"GRANT SELECT ON `db`.`replication slave` TO `x`@`%`"}, false},
	}
	for _, c := range cases {
		if got := grantsReplication(c.lines); got != c.want {
			t.Errorf("grantsReplication(%q) = %v, want %v", c.lines, got, c.want)
		}
	}
}
