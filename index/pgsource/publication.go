package pgsource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/sqldb"
)

// publishAll is what the source's publication publishes.
const publishAll = "insert, update, delete, truncate"

// ensurePublication makes the pgoutput publication cover Tables. The source's own publication
// (Options.Publication unset: named after the slot) is created when missing and extended with
// the tables it lacks, and publishes truncates too (one created before it did is altered); a
// named one must already publish inserts, updates and deletes of every table, every column,
// without a row filter, and a warning says so when it does not publish truncates. Errors:
// EINVALID naming the statement to run, EUNAVAILABLE.
func (s *Source) ensurePublication(ctx context.Context) error {
	own := s.opts.Publication == s.opts.Slot
	pub := quoteIdent(s.opts.Publication)
	var ins, upd, del, trunc bool
	err := s.opts.DB.QueryRowContext(ctx, "SELECT pubinsert, pubupdate, pubdelete, pubtruncate FROM pg_publication WHERE pubname = $1", s.opts.Publication).Scan(&ins, &upd, &del, &trunc)
	missing := errors.Is(err, sql.ErrNoRows)
	if err != nil && !missing {
		return sqldb.Map(err, "look up publication "+s.opts.Publication)
	}
	all := make([]string, len(s.opts.Tables))
	for i, t := range s.opts.Tables {
		schema, name := splitTable(t)
		all[i] = quoteIdent(schema) + "." + quoteIdent(name)
	}
	if missing {
		if !own {
			return redstate.Errorf(redstate.EINVALID, "pg source: publication %s does not exist: run CREATE PUBLICATION %s FOR TABLE %s, or leave index.postgres.publication unset to let redstate create one",
				s.opts.Publication, pub, strings.Join(all, ", "))
		}
		if _, err := s.opts.DB.ExecContext(ctx, "CREATE PUBLICATION "+pub+" FOR TABLE "+strings.Join(all, ", ")+" WITH (publish = '"+publishAll+"')"); err != nil {
			return sqldb.Map(err, "create publication "+s.opts.Publication+" (the user needs CREATE on the database and to own the tables)")
		}
		s.log.Info("publication created", "publication", s.opts.Publication, "tables", all)
		return nil
	}
	if !ins || !upd || !del {
		return redstate.Errorf(redstate.EINVALID, "pg source: publication %s must publish inserts, updates and deletes: run ALTER PUBLICATION %s SET (publish = '%s')", s.opts.Publication, pub, publishAll)
	}
	switch {
	case !trunc && own:
		if _, err := s.opts.DB.ExecContext(ctx, "ALTER PUBLICATION "+pub+" SET (publish = '"+publishAll+"')"); err != nil {
			return sqldb.Map(err, "make publication "+s.opts.Publication+" publish truncates")
		}
		s.log.Info("publication now publishes truncates", "publication", s.opts.Publication)
	case !trunc:
		s.log.Warn("publication does not publish truncates: a TRUNCATE of a followed table leaves its rows in the index until redstate index verify --repair",
			"publication", s.opts.Publication, "fix", "ALTER PUBLICATION "+pub+" SET (publish = '"+publishAll+"')")
	}
	// Row filters and column lists (and their columns in pg_publication_tables) are PostgreSQL 15+.
	filters := "rowfilter IS NOT NULL OR NOT (attnames::text[] @> string_to_array($4, ','))"
	var version int
	if err := s.opts.DB.QueryRowContext(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return sqldb.Map(err, "read the server version")
	}
	if version < 150000 {
		filters = "$4::text IS NULL" // never: the check needs 15+
	}
	var lacking []string
	for i, t := range s.opts.Tables {
		schema, name := splitTable(t)
		spec, _ := s.ix.Table(s.opts.Database, name) // declared: checkIdentity ran first
		var filtered bool
		err := s.opts.DB.QueryRowContext(ctx, `SELECT `+filters+`
			FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3`,
			s.opts.Publication, schema, name, strings.Join(readColumns(spec), ",")).Scan(&filtered)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			lacking = append(lacking, all[i])
		case err != nil:
			return sqldb.Map(err, "read the tables of publication "+s.opts.Publication)
		case filtered:
			return redstate.Errorf(redstate.EINVALID, "pg source: publication %s has a row filter, or a column list without a column the index reads, on %s: the index needs every change of those columns; run ALTER PUBLICATION %s SET TABLE … without them",
				s.opts.Publication, all[i], pub)
		}
	}
	if len(lacking) == 0 {
		return nil
	}
	add := "ALTER PUBLICATION " + pub + " ADD TABLE " + strings.Join(lacking, ", ")
	if !own {
		return redstate.Errorf(redstate.EINVALID, "pg source: publication %s lacks %s: run %s", s.opts.Publication, strings.Join(lacking, ", "), add)
	}
	if _, err := s.opts.DB.ExecContext(ctx, add); err != nil {
		return sqldb.Map(err, fmt.Sprintf("add %s to publication %s", strings.Join(lacking, ", "), s.opts.Publication))
	}
	s.log.Info("tables added to the publication", "publication", s.opts.Publication, "tables", lacking)
	return nil
}
