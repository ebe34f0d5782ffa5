// secperf-go: `secperf crypto` rows through Go's standard library (crypto/ecdsa, crypto/rsa,
// crypto/ecdh, crypto/ed25519, crypto/cipher, crypto/mlkem), speaking the probe's speed protocol:
// the same options, batch calibration, warm-up and JSON lines (meta, row, sample, end;
// unsupported or error). The measuring goroutine is locked to its OS thread so the thread's CPU
// clock is its own; garbage collection on other threads is not in cpu_ns (it is in wall_ns).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const clockThreadCPU = 3 // CLOCK_THREAD_CPUTIME_ID

type args struct {
	alg, op, hash          string
	size                   int
	n, warmup              int
	minSampleUs, maxSecond float64
	prehashed              bool
	seed                   uint64
}

// An op prepared before timing: run does count operations.
type op struct {
	run     func(count int) error
	keyBits int
	detail  string
}

type unsupportedErr struct{ reason string }

func (e unsupportedErr) Error() string { return e.reason }

func library() string { return "Go " + strings.TrimPrefix(runtime.Version(), "go") + " crypto" }

func unsupported(a *args, why string) error {
	r := fmt.Sprintf("unsupported by %s: %s %s", library(), a.alg, a.op)
	if why != "" {
		r += " — " + why
	}
	return unsupportedErr{r}
}

func notImplemented(a *args) error {
	return unsupportedErr{fmt.Sprintf("not measured: secperf's Go backend does not implement %s %s", a.alg, a.op)}
}

func threadCPU() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPU, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

var t0 = time.Now()

func wall() int64 { return int64(time.Since(t0)) } // monotonic reading

type sample struct{ wall, cpu, ops int64 }

func timed(o *op, batch int) (sample, error) {
	c0 := threadCPU()
	w0 := wall()
	err := o.run(batch)
	w1 := wall()
	c1 := threadCPU()
	return sample{w1 - w0, c1 - c0, int64(batch)}, err
}

func calibrate(o *op, minUs float64) (int, error) {
	target := minUs * 1000
	b := 1
	var s sample
	var err error
	for {
		if s, err = timed(o, b); err != nil {
			return 0, err
		}
		if float64(s.wall) >= target || b >= 1<<40 {
			break
		}
		b *= 2
	}
	if b == 1 || s.wall == 0 {
		return b, nil
	}
	b = int(float64(b)*target/float64(s.wall) + 0.5)
	if b < 1 {
		b = 1
	}
	for i := 0; i < 3; i++ {
		if s, err = timed(o, b); err != nil {
			return 0, err
		}
		if float64(s.wall) >= target || s.wall == 0 {
			break
		}
		b = int(float64(b)*1.05*target/float64(s.wall)) + 1
	}
	return b, nil
}

func overheadNs() float64 {
	const reads = 1001
	w := make([]int64, reads)
	for i := range w {
		threadCPU()
		w[i] = wall()
	}
	d := make([]int64, reads-1)
	for i := range d {
		d[i] = w[i+1] - w[i]
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	m := (reads - 1) / 2
	return float64(d[m-1]+d[m]) / 2
}

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "--version" {
		emit(map[string]any{"type": "version", "tool": "secperf-go", "library": library()})
		return
	}
	if len(os.Args) < 2 || os.Args[1] != "speed" {
		fmt.Fprintln(os.Stderr, "usage: secperf-go speed --alg NAME --op OP [--size N] [--n N] [--warmup N] [--min-sample-us US] [--max-seconds S] [--hash sha256|sha1] [--prehashed] [--seed N]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("speed", flag.ExitOnError)
	a := &args{}
	fs.StringVar(&a.alg, "alg", "", "")
	fs.StringVar(&a.op, "op", "", "")
	fs.StringVar(&a.hash, "hash", "sha256", "")
	fs.IntVar(&a.size, "size", 32, "")
	fs.IntVar(&a.n, "n", 30, "")
	fs.IntVar(&a.warmup, "warmup", 2, "")
	fs.Float64Var(&a.minSampleUs, "min-sample-us", 1000, "")
	fs.Float64Var(&a.maxSecond, "max-seconds", 10, "")
	fs.BoolVar(&a.prehashed, "prehashed", false, "")
	fs.Uint64Var(&a.seed, "seed", 1, "")
	fs.String("key-cache", "", "keys are made in-process here: never timed")
	fs.Parse(os.Args[2:])
	if a.alg == "" || a.op == "" || a.size < 1 || (a.hash != "sha256" && a.hash != "sha1") {
		fmt.Fprintln(os.Stderr, "--alg and --op are required; --size >= 1; --hash sha256|sha1")
		os.Exit(2)
	}
	runtime.LockOSThread()
	emit(map[string]any{"type": "meta", "tool": "secperf-go", "library": library(),
		"timer_overhead_ns": overheadNs(), "clock": "Go monotonic (CLOCK_MONOTONIC)"})
	o, err := setup(a)
	if err != nil {
		if u, ok := err.(unsupportedErr); ok {
			emit(map[string]any{"type": "unsupported", "reason": u.reason})
			return
		}
		emit(map[string]any{"type": "error", "reason": err.Error()})
		os.Exit(1)
	}
	batch, err := calibrate(o, a.minSampleUs)
	if err != nil {
		emit(map[string]any{"type": "error", "reason": err.Error()})
		os.Exit(1)
	}
	var hash any
	if (a.op == "sign" || a.op == "verify") && !strings.HasPrefix(a.alg, "ed") {
		hash = a.hash
	}
	emit(map[string]any{"type": "row", "alg": a.alg, "op": a.op, "size_bytes": a.size, "hash": hash,
		"prehashed": a.prehashed, "batch": batch, "key_bits": o.keyBits, "detail": o.detail,
		"key_source": "generated in-process before timing"})
	for i := 0; i < a.warmup; i++ {
		if _, err := timed(o, batch); err != nil {
			emit(map[string]any{"type": "error", "reason": err.Error()})
			os.Exit(1)
		}
	}
	start := wall()
	budget := int64(a.maxSecond * 1e9)
	taken, stopped := 0, "n"
	for taken < a.n {
		s, err := timed(o, batch)
		if err != nil {
			emit(map[string]any{"type": "error", "reason": err.Error()})
			os.Exit(1)
		}
		taken++
		emit(map[string]any{"type": "sample", "wall_ns": s.wall, "cpu_ns": s.cpu, "ops": s.ops})
		if taken < a.n && wall()-start >= budget {
			stopped = "time"
			break
		}
	}
	emit(map[string]any{"type": "end", "samples": taken, "stopped": stopped,
		"elapsed_s": float64(wall()-start) / 1e9})
}
