package queueblock

import (
	"log/slog"

	"github.com/redstate/redstate/report"
)

// reportClient is the report flow's Client on its queue name: the built-in generator for
// handler report (with reports.Delay), CheckJob (a message without a valid RecordId is
// dead-lettered with the reason, no record touched), MarkFailed (a dead-lettered job's record
// goes to status 5) and, for handler webhook, the report body with the record id
// (report.WebhookBody), which report webhook receivers expect.
func reportClient(name string, records report.RecordStore, reports report.Config, log *slog.Logger) Client {
	delay := reports.Delay
	if delay == 0 {
		delay = -1 // none (report.Generator treats 0 as its default)
	}
	return Client{
		Queue:       name,
		HandlerName: report.HandlerReport,
		Handler:     (&report.Generator{Records: records, Delay: delay, Logger: log.With("queue", name)}).Handler(),
		Check:       report.CheckJob,
		OnDead:      report.MarkFailed(records),
		WebhookBody: report.WebhookBody,
	}
}
