package redisconn

import "testing"

func TestCommandStats_ParseSubAndClientUsec(t *testing.T) {
	before, err := parseCommandStats("# Commandstats\r\ncmdstat_evalsha:calls=10,usec=100,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\ncmdstat_zadd:calls=20,usec=40,usec_per_call=2.00\r\n")
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseCommandStats("# Commandstats\r\ncmdstat_evalsha:calls=30,usec=350,usec_per_call=11.67\r\ncmdstat_zadd:calls=60,usec=120,usec_per_call=2.00\r\ncmdstat_info:calls=1,usec=30,usec_per_call=30.00\r\ncmdstat_client|setname:calls=2,usec=1,usec_per_call=0.50\r\n")
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before)
	if d["evalsha"] != (CommandStat{Calls: 20, Usec: 250}) || d["zadd"] != (CommandStat{Calls: 40, Usec: 80}) || d["client|setname"] != (CommandStat{Calls: 2, Usec: 1}) {
		t.Errorf("delta %v", d)
	}
	// Scripts ran: only their time (it includes the ZADDs they called).
	if got := d.ClientUsec(); got != 250 {
		t.Errorf("ClientUsec with scripts = %d, want 250", got)
	}
	// No script: every command.
	plain := CommandStats{"lpush": {Calls: 5, Usec: 10}, "info": {Calls: 1, Usec: 3}}
	if got := plain.ClientUsec(); got != 13 {
		t.Errorf("ClientUsec without scripts = %d, want 13", got)
	}
	if s := d.String(); s != "evalsha 20×12.50µs, zadd 40×2.00µs, info 1×30.00µs, client|setname 2×0.50µs" {
		t.Errorf("String = %q", s)
	}
	if _, err := parseCommandStats("cmdstat_get:calls=x,usec=1"); err == nil {
		t.Error("a bad count parsed")
	}
}
