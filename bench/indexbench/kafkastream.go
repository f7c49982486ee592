package indexbench

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"time"
)

// flatMessage is a Canal flat message as Canal's MQ mode writes it to Kafka.
type flatMessage struct {
	Data      []map[string]string `json:"data"`
	Database  string              `json:"database"`
	Es        int64               `json:"es"`
	ID        uint64              `json:"id"`
	IsDdl     bool                `json:"isDdl"`
	MysqlType map[string]string   `json:"mysqlType"`
	Old       []map[string]string `json:"old"`
	PkNames   []string            `json:"pkNames"`
	SQL       string              `json:"sql"`
	SQLType   map[string]int      `json:"sqlType"`
	Table     string              `json:"table"`
	Ts        int64               `json:"ts"`
	Type      string              `json:"type"`
}

// kafkaRecord is one pre-built record of the Kafka bench: a flat message for one partition.
type kafkaRecord struct {
	partition int32
	value     []byte
	rows      int
}

// canalStream builds the Kafka bench's records: about events row changes of the bench table
// (every row inserted, half of them then moved to another category, a tenth deleted, as
// generate does), each row in the partition id%partitions, cut into flat messages of up to
// perMessage rows of one type, as Canal's MQ mode cuts a batch. A partition's records are in
// the order Canal would write them.
func canalStream(events, partitions, perMessage int) []kafkaRecord {
	rows := max(1, events*10/16)
	r := rand.New(rand.NewPCG(3, 4))
	type state struct{ las, cat, bra int }
	st := make([]state, rows+1)
	for id := 1; id <= rows; id++ {
		st[id] = state{1 + r.IntN(lasValues), 1 + r.IntN(catValues), 1 + r.IntN(braValues)}
	}
	row := func(id int) map[string]string {
		s := st[id]
		return map[string]string{"id": strconv.Itoa(id), "lastAddrId": strconv.Itoa(s.las), "categoryId": strconv.Itoa(s.cat),
			"brandId": strconv.Itoa(s.bra), "name": "item-" + strconv.Itoa(id), "yn": "1"}
	}
	var out []kafkaRecord
	es := time.Now().UnixMilli()
	var batch uint64
	// phase appends the changes of every step-th row as messages of typ; old gives a row's
	// previous values (updates).
	phase := func(typ string, step int, old func(id int) map[string]string) {
		pending := make([][]int, partitions)
		flush := func(p int) {
			ids := pending[p]
			if len(ids) == 0 {
				return
			}
			batch++
			m := flatMessage{Database: "bench", Table: "items", Type: typ, Es: es, Ts: es + 3, ID: batch, PkNames: []string{"id"},
				MysqlType: map[string]string{"id": "bigint(20)", "lastAddrId": "int(11)", "categoryId": "int(11)", "brandId": "int(11)", "name": "varchar(64)", "yn": "tinyint(1)"},
				SQLType:   map[string]int{"id": -5, "lastAddrId": 4, "categoryId": 4, "brandId": 4, "name": 12, "yn": -7}}
			for _, id := range ids {
				m.Data = append(m.Data, row(id))
				if old != nil {
					m.Old = append(m.Old, old(id))
				}
			}
			v, _ := json.Marshal(m)
			out = append(out, kafkaRecord{partition: int32(p), value: v, rows: len(ids)})
			pending[p] = ids[:0]
		}
		for id := 1; id <= rows; id += step {
			p := id % partitions
			pending[p] = append(pending[p], id)
			if len(pending[p]) == perMessage {
				flush(p)
			}
		}
		for p := range pending {
			flush(p)
		}
	}
	phase("INSERT", 1, nil)
	oldCat := make([]int, rows+1)
	for id := 1; id <= rows; id += 2 {
		oldCat[id] = st[id].cat
		st[id].cat = 1 + (st[id].cat % catValues)
	}
	phase("UPDATE", 2, func(id int) map[string]string { return map[string]string{"categoryId": strconv.Itoa(oldCat[id])} })
	phase("DELETE", 10, nil)
	return out
}
