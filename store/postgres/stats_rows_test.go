package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// stats are counts of a store's rows, for tests that check what the
// store keeps (monitoring reads Gauges).
type stats struct {
	// Tasks counts tasks by status, expired ones included until deleted.
	Tasks map[task.Status]int
	// Jobs counts jobs by state: available, running, awaiting_input,
	// done.
	Jobs map[string]int
	// Outbox counts outbox rows; LastOutboxID is the newest row's ID.
	Outbox       int
	LastOutboxID int64
	// SchemaVersion is the schema's version.
	SchemaVersion int
}

// stats counts the store's rows from one repeatable-read snapshot.
func (s *Store) stats(ctx context.Context) (stats, error) {
	st := stats{Tasks: map[task.Status]int{}, Jobs: map[string]int{}}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			if err := countBy(ctx, tx, `SELECT status, count(*) FROM `+s.q.ident+`.tasks GROUP BY status`,
				st.Tasks); err != nil {
				return err
			}
			if err := countBy(ctx, tx, `SELECT state, count(*) FROM `+s.q.ident+`.jobs GROUP BY state`,
				st.Jobs); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(max(id), 0) FROM `+s.q.ident+`.outbox`).
				Scan(&st.Outbox, &st.LastOutboxID); err != nil {
				return err
			}
			v, err := s.version(ctx, tx)
			st.SchemaVersion = v
			return err
		})
	if err != nil {
		return stats{}, wrapErr("stats", err)
	}
	return st, nil
}

// countBy adds the rows of a grouped count query to into.
func countBy[K ~string](ctx context.Context, tx pgx.Tx, query string, into map[K]int) error {
	rows, err := tx.Query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	return taskdata.CountBy(rows, into)
}
