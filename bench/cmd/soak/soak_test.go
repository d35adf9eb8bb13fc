package main

import (
	"io"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Duration != time.Minute || c.NoFile != 1024 || c.Trickle <= c.NoFile || c.MaxRSSMB != 256 || c.MaxP99 != 50*time.Millisecond {
		t.Errorf("defaults = %+v", c)
	}
	for _, args := range [][]string{
		{"-duration", "1s"},
		{"-duration", "1h"},
		{"-nofile", "10"},
		{"-trickle", "-1"},
		{"-trickle", "20000", "-idle", "1"},
		{"-max-p99", "0s"},
		{"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

func TestQuantile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		if got := quantile(d, tt.q); got != tt.want {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if quantile(nil, 0.99) != 0 {
		t.Error("quantile of nothing")
	}
}
