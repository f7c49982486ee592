package report

import (
	"context"
	"fmt"

	"github.com/redstate/redstate/queue"
)

// MarkFailed returns the queue.WorkerSettings.OnDead hook of a report queue: when the Worker
// dead-letters a job it sets the job's record to status 5 (生成失败) with the failure as its
// reason. A failure to do so is returned for the Worker to log; the job stays dead-lettered
// (状态更新失败不影响死信处理: a failed status update does not undo the dead letter).
func MarkFailed(records RecordStore) queue.DeadHook {
	return func(ctx context.Context, m queue.Message, cause error) error {
		id, err := RecordIDOf(m)
		if err != nil {
			return err
		}
		if _, err := records.SetFailed(ctx, id, cause.Error()); err != nil {
			return fmt.Errorf("set record %d status 5: %w", id, err)
		}
		return nil
	}
}
