package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// InTx runs fn in a transaction: committed when fn returns nil, rolled back when it returns an
// error or panics (the panic is re-raised after the rollback). On SQLite the transaction holds
// the write lock from its start (BEGIN IMMEDIATE). The error is fn's, or the commit's mapped
// by Map.
func InTx(ctx context.Context, db *DB, fn func(tx *sql.Tx) error) error {
	return inTx(ctx, db.DB, fn)
}

// inTx is InTx on a pool or on one connection.
func inTx(ctx context.Context, on beginner, fn func(tx *sql.Tx) error) (err error) {
	tx, err := on.BeginTx(ctx, nil)
	if err != nil {
		return Map(err, "begin transaction")
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		return err
	}
	return Map(tx.Commit(), "commit")
}
