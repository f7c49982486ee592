package buildstatus_test

import (
	"testing"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/storetest"
)

// The benchmarks measure the client-side CPU of the hot paths a store runs per document:
// Encode on Save, Build.Doc on a read that needs the document, Validate on Save, and
// NormalizeBuildID per id of a batch read.

func BenchmarkEncode(b *testing.B) {
	doc := storetest.SampleDoc("", "")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildstatus.Encode(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	stored := []byte(storetest.SampleJSON)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildstatus.NewBuild(stored).Doc(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	doc := storetest.SampleDoc("", "")
	b.ReportAllocs()
	for b.Loop() {
		if err := buildstatus.Validate(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNormalizeBuildID(b *testing.B) {
	b.Run("canonical", func(b *testing.B) {
		id := storetest.NewBuildID()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := buildstatus.NormalizeBuildID(id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("uppercase", func(b *testing.B) {
		id := "550E8400-E29B-41D4-A716-446655440000"
		b.ReportAllocs()
		for b.Loop() {
			if _, err := buildstatus.NormalizeBuildID(id); err != nil {
				b.Fatal(err)
			}
		}
	})
}
