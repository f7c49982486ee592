package mysqlsource

import "github.com/redstate/redstate/index"

// Keys are the Redis keys of the source's state, built by index.BlockKeys.MySQL (the layout is
// documented there).
type Keys = index.MySQLSourceKeys
