package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/report"
)

// reportRoutes registers the report flow's routes (docs/report.md). Without Deps.Reports the routes
// answer 404 not_found naming the missing configuration.
func (s *server) reportRoutes() {
	s.handle("POST /api/assessment/submit", roleWrite, s.submitAnswers)
	s.handle("GET /api/assessment/{id}/result", roleRead, s.reportResult)
	s.handle("POST /api/assessment/{id}/result", roleAdmin, s.completeReport)
	s.handle("POST /api/assessment/{id}/failure", roleAdmin, s.failReport)
	s.handle("POST /api/admin/assessmentRecord/regenerateReport", roleAdmin, s.regenerateReport)
	s.handle("POST /api/admin/assessmentRecord/batchRegenerateReport", roleAdmin, s.batchRegenerateReport)
}

// errNoReports answers report routes on a server without the report flow.
func errNoReports() error {
	return redstate.Errorf(redstate.ENOTFOUND, "the report flow is not enabled on this server (add the queue named by report.queue, default report:queue, to queue.queues)")
}

// submitRequest is the body of POST /api/assessment/submit.
type submitRequest struct {
	RecordID int64           `json:"recordId"`
	Answers  json.RawMessage `json:"answers"`
}

// submitResponse is the answer of POST /api/assessment/submit.
type submitResponse struct {
	ID         int64  `json:"id"`
	Status     int    `json:"status"`
	StatusText string `json:"statusText"`
}

// submitAnswers is the seed's SubmitAnswersAsync: POST /api/assessment/submit
// {"recordId": n, "answers": {...}} stores the answers with status 3 and enqueues the report
// job; 202 {"id","status":3,"statusText":"生成中"} at once. An enqueue failure does not fail it.
func (s *server) submitAnswers(w http.ResponseWriter, r *http.Request) error {
	if s.reports == nil {
		return errNoReports()
	}
	var req submitRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	rec, err := s.reports.Submit(r.Context(), req.RecordID, req.Answers)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, submitResponse{ID: rec.ID, Status: rec.Status, StatusText: report.StatusText(rec.Status)})
	return nil
}

// reportResult is the seed's GetResultStatusAsync: GET /api/assessment/{id}/result → 200
// {"id","status","statusText","resultText","result","updatedAt"}; 404 with businessCode 3241
// for an unknown id.
func (s *server) reportResult(w http.ResponseWriter, r *http.Request) error {
	if s.reports == nil {
		return errNoReports()
	}
	id, err := recordIDParam(r)
	if err != nil {
		return err
	}
	st, err := s.reports.Status(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// regenerateRequest is the seed's RegenerateReportRequest.
type regenerateRequest struct {
	ID int64 `json:"id"`
}

// batchRegenerateRequest is the seed's BatchRegenerateReportRequest.
type batchRegenerateRequest struct {
	IDs []int64 `json:"ids"`
}

// regenerateReport: POST /api/admin/assessmentRecord/regenerateReport {"id": n} → 200 {};
// 404/3241 unknown record, 409/2005 status not 3 or 5.
func (s *server) regenerateReport(w http.ResponseWriter, r *http.Request) error {
	if s.reports == nil {
		return errNoReports()
	}
	var req regenerateRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	if err := s.reports.Regenerate(r.Context(), req.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

// batchRegenerateReport: POST /api/admin/assessmentRecord/batchRegenerateReport {"ids": [...]}
// → 200 {"SuccessCount": a, "SkippedCount": b}; 400/1001 for an empty list.
func (s *server) batchRegenerateReport(w http.ResponseWriter, r *http.Request) error {
	if s.reports == nil {
		return errNoReports()
	}
	var req batchRegenerateRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	res, err := s.reports.BatchRegenerate(r.Context(), req.IDs)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// recordIDParam parses the {id} path segment of a report route.
func recordIDParam(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return 0, redstate.Errorf(redstate.EINVALID, "record id must be an integer, got %s", truncate(r.PathValue("id")))
	}
	return id, nil
}

// completeRequest is the body of POST /api/assessment/{id}/result.
type completeRequest struct {
	Result json.RawMessage `json:"result"`
}

// failRequest is the body of POST /api/assessment/{id}/failure.
type failRequest struct {
	Reason string `json:"reason"`
}

// completeReport is how a generator outside redstate reports a finished report:
// POST /api/assessment/{id}/result {"result": ...} [admin] → 200 with the record's status
// document (status 4); 404/3241 unknown record, 409/2005 record not in status 3.
func (s *server) completeReport(w http.ResponseWriter, r *http.Request) error {
	if s.reports == nil {
		return errNoReports()
	}
	id, err := recordIDParam(r)
	if err != nil {
		return err
	}
	var req completeRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	rec, err := s.reports.Complete(r.Context(), id, req.Result)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, report.StatusOf(rec))
	return nil
}

// failReport is how a generator outside redstate reports that a report cannot be generated:
// POST /api/assessment/{id}/failure {"reason": "..."} [admin] → 200 with the status document
// (status 5); 404/3241, 409/2005 as completeReport.
func (s *server) failReport(w http.ResponseWriter, r *http.Request) error {
	if s.reports == nil {
		return errNoReports()
	}
	id, err := recordIDParam(r)
	if err != nil {
		return err
	}
	var req failRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	rec, err := s.reports.Fail(r.Context(), id, req.Reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, report.StatusOf(rec))
	return nil
}
