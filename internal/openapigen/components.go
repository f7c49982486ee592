package main

import (
	"github.com/redstate/redstate/buildstatus"
)

// schemas are the shared component schemas, named after the Go types they describe (the
// package and type are in each description).
func schemas() obj {
	return obj{
		// httpapi.errorBody
		"Error": object("The body of every error response (httpapi.errorBody). code is one of the stable codes listed in docs/openapi.md; each response lists the codes it can carry in x-redstate-error-codes.",
			req("code", str("Stable machine-readable error code, e.g. not_found.")),
			req("message", str("Human-readable explanation.")),
			opt("businessCode", integer("The seed's numeric business code (1001, 2005, 3241) for report-flow errors.")),
		),
		// httpapi.statusBody
		"Status": object("Answer of /healthz and /readyz (httpapi.statusBody).",
			req("status", enum(str(""), "ok", "ready")),
		),

		// buildstatus
		"Build":               buildSchema(false),
		"BuildInput":          buildSchema(true),
		"PlatformResult":      platformResultSchema(false),
		"PlatformResultInput": platformResultSchema(true),
		"BuildPage": object("One page of a build listing (httpapi.pageBody).",
			req("builds", array(ref("Build"), "The builds of this page.")),
			req("cursor", str("Pass as ?cursor= for the next page; empty when the listing is complete.")),
		),
		"BuildListing": obj{
			"description": "Answer of GET /v1/builds: a BuildPage, or a BuildBatch when ids is given.",
			"oneOf":       []any{ref("BuildPage"), ref("BuildBatch")},
		},
		"BuildBatch": object("Answer of a batch read GET /v1/builds?ids=... (httpapi.streamBatch).",
			req("builds", mapOf(ref("Build"), "The found builds by canonical buildId.")),
			req("missing", array(str(""), "Requested ids that do not exist.")),
			opt("deferred", array(str(""), "Ids left out because the response reached its size bound (or a later chunk failed); ask for them again.")),
			opt("error", str("Why a later chunk failed (its ids are deferred).")),
		),

		// report
		"SubmitRequest": object("Body of POST /api/assessment/submit (httpapi.submitRequest).",
			opt("recordId", integer("The assessment record id, > 0.")),
			opt("answers", anyJSON("The answers, any JSON value.")),
		),
		"SubmitResponse": object("Answer of POST /api/assessment/submit (httpapi.submitResponse).",
			req("id", integer("The record id.")),
			req("status", integer("The record status: 3 (生成中).")),
			req("statusText", str("The seed's name of status.")),
		),
		"ReportStatus": object("A report record's status (report.Status).",
			req("id", integer("The record id.")),
			req("status", integer("1..5 (3 生成中, 4 已完成, 5 生成失败).")),
			req("statusText", str("The seed's name of status.")),
			req("resultText", str("For status 5 the seed's failure text, else statusText.")),
			opt("result", anyJSON("The generated report; present only in status 4.")),
			req("updatedAt", dateTime("Time of the record's last write.")),
		),
		"CompleteReportRequest": object("Body of POST /api/assessment/{id}/result (httpapi.completeRequest).",
			opt("result", anyJSON("The generated report, any JSON value.")),
		),
		"FailReportRequest": object("Body of POST /api/assessment/{id}/failure (httpapi.failRequest).",
			opt("reason", str("Why the report cannot be generated.")),
		),
		"RegenerateRequest": object("Body of regenerateReport (the seed's RegenerateReportRequest).",
			opt("id", integer("The record id.")),
		),
		"BatchRegenerateRequest": object("Body of batchRegenerateReport (the seed's BatchRegenerateReportRequest).",
			opt("ids", array(integer(""), "The record ids (1..1000).")),
		),
		"BatchRegenerateResult": object("Answer of batchRegenerateReport (queue.BatchRegenerateResult); SuccessCount + SkippedCount is the number of ids.",
			req("SuccessCount", integer("Records reset and enqueued (成功入队数量).")),
			req("SkippedCount", integer("Records skipped (unknown, or not in status 3 or 5).")),
		),
		"Empty": object("An empty object."),

		// queue
		"QueueStats": object("Answer of GET /v1/queues/{queue}/stats (queue.Stats with the queue name).",
			req("queue", str("The queue name.")),
			req("pending", integer("Jobs waiting on the pending list.")),
			req("running", integer("Jobs in flight at some consumer.")),
			req("retrying", integer("Jobs waiting in the retry schedule.")),
			req("dead", integer("Jobs on the dead-letter list.")),
		),
		"QueueMessage": object("A queue job as stored (queue.Message); member names are the seed's.",
			req("RecordId", integer("The business record id.")),
			req("RetryCount", integer("Retries so far.")),
			req("EnqueueTime", str("When the job was first enqueued: zone-less UTC, e.g. 2025-01-15T10:30:00.")),
			opt("Payload", anyJSON("Optional job input.")),
			opt("JobId", str("The job's id.")),
			opt("LastError", str("The reason of the job's last failure.")),
			opt("FailedAt", str("When the job last failed (zone-less UTC like EnqueueTime).")),
		),
		"DeadLetter": object("One dead letter (queue.DeadLetter).",
			req("raw", str("The exact stored string; send it to .../dead/requeue.")),
			opt("message", ref("QueueMessage")),
		),
		"DeadLetters": object("Answer of GET /v1/queues/{queue}/dead (httpapi.deadLettersResponse), newest first.",
			req("queue", str("The queue name.")),
			req("start", integer("The offset of the first entry.")),
			req("deadLetters", array(ref("DeadLetter"), "")),
		),
		"RequeueRequest": object("Body of POST /v1/queues/{queue}/dead/requeue (httpapi.requeueRequest).",
			opt("raw", str("The dead letter's stored string, as listed (required).")),
		),
		"QueueCount": object("Answer of the dead-letter mutations (httpapi.countResponse).",
			req("queue", str("The queue name.")),
			opt("requeued", integer("Dead letters requeued.")),
			opt("purged", integer("Dead letters deleted.")),
		),

		// executor
		"RetryPolicy": object("A task's automatic retry policy (executor.RetryPolicy).",
			opt("maxAttempts", integer("Attempts of a run, >= 1 (1: no automatic retry).")),
			opt("backoff", duration("Wait before the second attempt; doubles per attempt.")),
			opt("maxBackoff", duration("Cap of the wait (0: none).")),
		),
		"TaskDef": object("A task of a new plan (executor.TaskDef).",
			opt("taskId", str("Optional; generated when empty.")),
			req("tenantId", str("The tenant; one running task per tenant.")),
			req("stages", array(str(""), "The ordered stage names.")),
			req("handler", str("The stage handler's name.")),
			opt("contextData", mapOf(str(""), "Initial key/value state shared by the stages.")),
			opt("retry", ref("RetryPolicy")),
		),
		"CreatePlanRequest": object("Body of POST /v1/executor/plans (executor.PlanDef plus start).",
			opt("planId", str("Optional; generated when empty.")),
			req("maxConcurrency", integer("Tasks of the plan running at once on this instance, >= 1.")),
			req("tasks", array(ref("TaskDef"), "")),
			opt("start", boolean("Start the plan at once (default true).")),
		),
		"TaskStatus": object("A task's status with progress (executor.TaskStatusInfo, the seed's queryTaskStatusByTenant).",
			req("taskId", str("")),
			req("tenantId", str("")),
			req("planId", str("")),
			req("status", enum(str(""), "CREATED", "RUNNING", "PAUSED", "COMPLETED", "FAILED", "CANCELLED")),
			req("pauseRequested", boolean("")),
			req("stageNames", nullableArray(str(""), "")),
			req("lastCompletedStageIndex", integer("-1 for none.")),
			req("completedStages", integer("")),
			req("progress", number("completedStages / len(stageNames).")),
			opt("currentStage", str("The next stage to run.")),
			opt("reason", str("Why the task failed or was cancelled.")),
			opt("handler", str("")),
			req("hasCheckpoint", boolean("")),
			req("checkpoint", enum(str(""), "present", "none", "unreadable")),
			opt("checkpointError", str("Why a stored checkpoint is unreadable.")),
			req("lockHeld", boolean("Whether the tenant's lock is held now (by any instance).")),
			req("createdAt", dateTime("")),
			req("updatedAt", dateTime("")),
		),
		"PlanStatus": object("A plan and its tasks (executor.PlanStatusInfo, the seed's queryPlanStatus).",
			req("planId", str("")),
			req("status", enum(str(""), "READY", "RUNNING", "PAUSED", "COMPLETED", "FAILED")),
			req("taskIds", nullableArray(str(""), "")),
			req("progress", number("")),
			req("maxConcurrency", integer("")),
			req("createdAt", dateTime("Zero until the plan's first event is applied.")),
			req("updatedAt", dateTime("")),
			req("tasks", nullableArray(ref("TaskStatus"), "")),
		),
		"PlanActionResult": object("Answer of POST /v1/executor/plans/{planId}/{action}: one result per task.",
			req("planId", str("")),
			req("action", enum(str(""), "pause", "resume", "cancel")),
			req("tasks", array(object("One task's answer (httpapi.actionResult).",
				req("taskId", str("")),
				req("ok", boolean("")),
				opt("error", str("Why the action did not apply (a conflict, e.g. the task is finished).")),
			), "")),
		),
		"TenantCheckpoint": object("Answer of GET /v1/executor/tenants/{tenantId}/checkpoint.",
			req("tenantId", str("")),
			req("taskId", str("The tenant's current task.")),
			req("hasCheckpoint", boolean("")),
			req("checkpoint", enum(str(""), "present", "none", "unreadable")),
			opt("checkpointError", str("Why a stored checkpoint is unreadable.")),
		),
		"RetryTenantRequest": object("Body of POST /v1/executor/tenants/{tenantId}/retry (httpapi.retryRequest).",
			opt("fromCheckpoint", boolean("Resume from the checkpoint instead of the first stage.")),
		),
		"RetryTenantAccepted": object("Answer of POST /v1/executor/tenants/{tenantId}/retry.",
			req("tenantId", str("")),
			req("taskId", str("")),
			req("fromCheckpoint", boolean("")),
		),
		"TenantActionAccepted": object("Answer of POST /v1/executor/tenants/{tenantId}/{action}.",
			req("tenantId", str("")),
			req("taskId", str("")),
			req("action", enum(str(""), "pause", "resume", "cancel")),
		),

		// index
		"IndexEventsRequest": object("Body of POST /v1/index/events (httpapi.eventsRequest).",
			opt("format", enum(str("Event format (default native)."), "", "native", "canal", "debezium")),
			opt("events", array(anyJSON(""), "The change events in that format.")),
		),
		"IndexApplyResult": object("Answer of POST /v1/index/events (index.Result).",
			req("applied", integer("")),
			req("stale", integer("Changes older than the stored version.")),
			req("skipped", integer("DDL and undeclared tables.")),
			req("failed", integer("Events that could not be read or converted (dead-lettered).")),
			opt("errors", array(str(""), "The failures, at most 20.")),
		),
		"IndexRows": object("Answer of GET /v1/index/{db}/{table} (httpapi.indexQueryResponse).",
			req("db", str("")),
			req("table", str("")),
			req("rows", mapOf(anyJSON(""), "Matching rows by primary key.")),
			opt("cursor", str("Continues a paged query (\"0\": done); absent for a whole-key answer.")),
		),
		"IndexBatchRequest": object("Body of POST /v1/index/{db}/{table}/batch (httpapi.indexBatchRequest).",
			opt("queries", array(mapOf(str(""), "Conditions: column = value."), "1..100 queries.")),
		),
		"IndexBatchResult": object("Answer of POST /v1/index/{db}/{table}/batch, in request order.",
			req("results", array(object("",
				req("rows", mapOf(anyJSON(""), "Matching rows by primary key.")),
			), "")),
		),

		// feed
		"PublishPostRequest": object("Body of POST /v1/feed/posts: the seed's Blog (httpapi.publishRequest).",
			opt("userId", integer("The author.")),
			opt("title", str("")),
			opt("content", str("")),
			opt("images", nullableArray(str(""), "Image URLs.")),
		),
		"Post": object("A stored post (feed.Post).", postFields()...),
		"PostView": object("A post as a viewer sees it (feed.PostView).",
			append(postFields(), req("isLike", boolean("Whether the viewer likes the post.")))...),
		"FeedPage": object("One page of posts (httpapi.feedPage).",
			req("records", nullableArray(ref("PostView"), "Newest first.")),
			req("hasMore", boolean("")),
			opt("next", str("Pass as ?cursor= for the next page.")),
			opt("current", integer("The page number asked for with ?current=.")),
			req("size", integer("")),
		),
		"Marked":  object("Answer of .../read-all.", req("marked", integer("Posts marked read."))),
		"Changed": object("Answer of follow, unfollow, like and unlike.", req("changed", boolean("Whether the state changed."))),
		"UnreadCounts": object("A viewer's unread posts per author (GET .../unread-counts and the counts events).",
			req("counts", mapOf(integer(""), "Unread posts by author id.")),
			req("total", integer("")),
		),
	}
}

// duration is a Go duration in a retry policy: integer nanoseconds or a string like "250ms".
func duration(desc string) obj {
	return obj{"description": desc, "oneOf": []any{integer("Nanoseconds."), str("A Go duration such as 1s or 250ms.")}}
}

// postFields are the members of feed.Post.
func postFields() []field {
	return []field{
		req("id", integer("The post id.")),
		req("userId", integer("The author.")),
		req("title", str("")),
		req("content", str("")),
		req("images", nullableArray(str(""), "Image URLs.")),
		req("liked", integer("Number of likes.")),
		req("createTime", dateTime("")),
		req("updateTime", dateTime("")),
	}
}

// buildSchema is the build document (buildstatus.PublishResponse). As a request body
// (input) every member may be omitted; a stored document has them all. Date-times are
// ISO-8601 strings, with or without a zone, kept as sent.
func buildSchema(input bool) obj {
	m := req
	if input {
		m = opt
	}
	desc := "A build document (buildstatus.PublishResponse), the seed's PublishResponse. Stored and answered byte for byte."
	if input {
		desc = "Body of PUT /v1/builds/{buildId} (buildstatus.PublishResponse); buildId may be omitted and must otherwise equal the path's."
	}
	results := "PlatformResult"
	if input {
		results = "PlatformResultInput"
	}
	return object(desc,
		m("buildId", str("A UUID, canonical (lower case) when stored.")),
		m("projectId", str("")),
		m("platforms", nullableArray(str(""), "")),
		m("status", str("1-64 characters of A-Z a-z 0-9 _ -, e.g. IN_PROGRESS.")),
		m("platformResults", nullable(mapOf(obj{"anyOf": []any{ref(results), obj{"type": "null"}}}, "Results by platform name."))),
		m("estimatedTime", nullable(integer("Estimated time, >= 0."))),
		m("createdAt", nullable(str("ISO-8601 date-time."))),
		m("updatedAt", nullable(str("ISO-8601 date-time."))),
	)
}

// platformResultSchema is one platform's result (buildstatus.PlatformResult).
func platformResultSchema(input bool) obj {
	m := req
	if input {
		m = opt
	}
	desc := "One platform's result (buildstatus.PlatformResult)."
	if input {
		desc = "Body of PATCH /v1/builds/{buildId}/platforms/{platform} (buildstatus.PlatformResult); platform may be omitted and must otherwise equal the path's."
	}
	return object(desc,
		m("platform", str("")),
		m("status", str("1-64 characters of A-Z a-z 0-9 _ -, e.g. SUCCESS.")),
		m("progress", nullable(integer("0..100."))),
		m("logUrl", nullable(str("Data, never markup."))),
		m("downloadUrl", nullable(str("Data, never markup."))),
		m("errorMessage", nullable(str(""))),
		m("startedAt", nullable(str("ISO-8601 date-time."))),
		m("completedAt", nullable(str("ISO-8601 date-time."))),
	)
}

// maxListLimit and maxBatch bound listings and batch reads of builds.
const (
	maxListLimit = buildstatus.MaxListLimit
	maxBatch     = buildstatus.MaxBatch
)
