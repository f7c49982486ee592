package pgsource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/sqldb"
)

// checkIdentity refuses tables whose deletes would not carry the index key. A delete reaches
// the index with the old row's replica identity only: the primary key (REPLICA IDENTITY
// DEFAULT), the columns of an index (USING INDEX), every column (FULL) or nothing (NOTHING, or
// DEFAULT without a primary key — and PostgreSQL then refuses UPDATE and DELETE on the table
// once it is in a publication). The index needs exactly its key column from the old row: to
// delete the row, and to remove the old key when an update changes the key. Updates carry the
// whole new row, which is what logical deletes (the delete column) need, except unchanged
// TOASTed values: the declared columns that can be TOASTed are logged as a warning unless
// REPLICA IDENTITY is FULL (a change missing one is dead-lettered by the pgoutput stream).
// Errors: EINVALID naming the statement to run, EUNAVAILABLE.
func (s *Source) checkIdentity(ctx context.Context) error {
	var problems []string
	for _, table := range s.opts.Tables {
		schema, name := splitTable(table)
		spec, ok := s.ix.Table(s.opts.Database, name)
		if !ok {
			return redstate.Errorf(redstate.EINVALID, "pg source: table %s.%s is not declared in index.tables", s.opts.Database, name)
		}
		ident := quoteIdent(schema) + "." + quoteIdent(name)
		var mode, identityList, primaryList string
		var hasPrimary bool
		err := s.opts.DB.QueryRowContext(ctx, `SELECT c.relreplident::text,
			COALESCE((SELECT string_agg(a.attname, ',') FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
				WHERE i.indrelid = c.oid AND i.indisreplident), ''),
			COALESCE((SELECT string_agg(a.attname, ',') FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
				WHERE i.indrelid = c.oid AND i.indisprimary), ''),
			EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)
			FROM pg_class c WHERE c.oid = to_regclass($1)`, ident).Scan(&mode, &identityList, &primaryList, &hasPrimary)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && mode == "") {
			return redstate.Errorf(redstate.EINVALID, "pg source: table %s does not exist", ident)
		}
		if err != nil {
			return sqldb.Map(err, "read the replica identity of "+table)
		}
		identity, primary := splitList(identityList), splitList(primaryList)
		full := "ALTER TABLE " + ident + " REPLICA IDENTITY FULL"
		switch mode {
		case "f":
		case "n":
			problems = append(problems, fmt.Sprintf("%s has REPLICA IDENTITY NOTHING: its deletes carry no key; run %s (or REPLICA IDENTITY DEFAULT with a primary key that includes %s)", ident, full, spec.Key))
		case "d":
			if !hasPrimary {
				problems = append(problems, fmt.Sprintf("%s has no primary key and REPLICA IDENTITY DEFAULT: its deletes carry no key; run %s, or add a primary key that includes %s", ident, full, spec.Key))
			} else if !slices.Contains(primary, spec.Key) {
				problems = append(problems, fmt.Sprintf("the primary key (%s) of %s does not include the index key %s: deletes and key changes would not carry it; run %s", strings.Join(primary, ", "), ident, spec.Key, full))
			}
		case "i":
			if !slices.Contains(identity, spec.Key) {
				problems = append(problems, fmt.Sprintf("the replica identity index (%s) of %s does not include the index key %s: deletes and key changes would not carry it; run %s", strings.Join(identity, ", "), ident, spec.Key, full))
			}
		}
		if mode != "f" {
			s.warnToast(ctx, ident, spec.Key, readColumns(spec))
		}
	}
	if len(problems) > 0 {
		return redstate.Errorf(redstate.EINVALID, "pg source: %s", strings.Join(problems, "; "))
	}
	return nil
}

// warnToast logs the declared columns of table (other than the key) that PostgreSQL may TOAST:
// an update leaving such a value unchanged does not carry it without REPLICA IDENTITY FULL.
func (s *Source) warnToast(ctx context.Context, ident, key string, columns []string) {
	var list string
	err := s.opts.DB.QueryRowContext(ctx, `SELECT COALESCE(string_agg(attname, ','), '') FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped AND attstorage IN ('x', 'e') AND attname = ANY(string_to_array($2, ','))`,
		ident, strings.Join(columns, ",")).Scan(&list)
	if err != nil {
		return // a warning only
	}
	toastable := slices.DeleteFunc(splitList(list), func(c string) bool { return c == key })
	if len(toastable) > 0 {
		s.log.Warn("declared columns can be TOASTed: an update that leaves such a large value unchanged does not carry it (pgoutput dead-letters that change, wal2json leaves the column out); run ALTER TABLE "+ident+" REPLICA IDENTITY FULL to have it",
			"table", ident, "columns", toastable)
	}
}

// splitList splits a comma-separated list; "" is none.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
