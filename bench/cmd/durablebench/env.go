package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/taskwire/taskwire/internal/proccpu"
)

// loadAverage returns /proc/loadavg's first three fields, as uptime prints
// them.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

// clockTicks is USER_HZ, the unit of /proc CPU times on Linux.
const clockTicks = 100

// cpuSnapshot is the CPU time used so far by this process, by other
// processes of interest, by PostgreSQL backends and by the whole machine.
type cpuSnapshot struct {
	at       time.Time
	self     time.Duration         // when the snapshot began
	selfEnd  time.Duration         // when it ended: the scan of /proc is not in the next window
	children map[int]time.Duration // watched child processes, by PID
	postgres map[int]time.Duration // postgres processes, by PID
	busy     time.Duration         // machine: all CPU time but idle and iowait
}

// takeCPU snapshots CPU times; watch are extra processes (e2e servers).
func takeCPU(watch ...int) cpuSnapshot {
	s := cpuSnapshot{at: time.Now(), children: map[int]time.Duration{}, postgres: map[int]time.Duration{}}
	s.self = selfCPU()
	for _, pid := range watch {
		if _, t, ok := procCPU(pid); ok {
			s.children[pid] = t
		}
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if comm, t, ok := procCPU(pid); ok && comm == "postgres" {
			s.postgres[pid] = t
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		f := strings.Fields(string(line))
		var total, idle int64
		for i, v := range f[1:] {
			n, _ := strconv.ParseInt(v, 10, 64)
			if i >= 8 { // guest times are already in user and nice
				break
			}
			total += n
			if i == 3 || i == 4 {
				idle += n
			}
		}
		s.busy = time.Duration(total-idle) * time.Second / clockTicks
	}
	s.selfEnd = selfCPU()
	return s
}

// selfCPU returns the CPU time (user and system) this process has used;
// zero when it cannot be read.
func selfCPU() time.Duration {
	d, _ := proccpu.Used()
	return d
}

// procCPU returns a process's command name and user+system CPU time.
func procCPU(pid int) (string, time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return "", 0, false
	}
	comm := string(b[open+1 : close])
	f := strings.Fields(string(b[close+1:]))
	if len(f) < 13 {
		return "", 0, false
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return comm, time.Duration(ut+st) * time.Second / clockTicks, true
}

// cpuUse is the CPU used between two snapshots.
type cpuUse struct {
	Wall     time.Duration
	Self     time.Duration
	Children time.Duration
	Postgres time.Duration // every postgres process
	Ours     time.Duration // the benchmark's own backends, when known
	KnowOurs bool
	Busy     time.Duration
}

// since returns the CPU used from s0 to s; ours are the PIDs of the
// benchmark's backends (nil: unknown).
func (s cpuSnapshot) since(s0 cpuSnapshot, ours ...int) cpuUse {
	u := cpuUse{Wall: s.at.Sub(s0.at), Self: s.self - s0.selfEnd, Busy: s.busy - s0.busy, KnowOurs: ours != nil}
	for pid, t := range s.children {
		u.Children += t - s0.children[pid]
	}
	mine := map[int]bool{}
	for _, pid := range ours {
		mine[pid] = true
	}
	for pid, t := range s.postgres {
		d := t - s0.postgres[pid] // a new backend counts from zero
		u.Postgres += d
		if mine[pid] {
			u.Ours += d
		}
	}
	return u
}

// String renders the use in cores (CPU seconds per wall second).
func (u cpuUse) String() string {
	if u.Wall <= 0 {
		return "n/a"
	}
	cores := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()/u.Wall.Seconds()) }
	s := "CPU cores used: this process " + cores(u.Self)
	if u.Children > 0 {
		s += ", server process " + cores(u.Children)
	}
	s += ", postgres " + cores(u.Postgres)
	if u.KnowOurs {
		s += " (the benchmark's backends " + cores(u.Ours) + ")"
	}
	s += ", whole machine " + cores(u.Busy) + " of " + strconv.Itoa(runtime.NumCPU())
	return s
}

// perJob renders the CPU time per job of this process and of the
// benchmark's PostgreSQL backends.
func (u cpuUse) perJob(jobs int) string {
	s := fmt.Sprintf("CPU per job: this process %s", fmtDur(u.Self/time.Duration(jobs)))
	if u.KnowOurs {
		s += fmt.Sprintf(", the benchmark's PostgreSQL backends %s", fmtDur(u.Ours/time.Duration(jobs)))
	}
	return s
}
