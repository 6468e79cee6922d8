package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestStoreCutKeepsOnlyWhatWasFlushed(t *testing.T) {
	s, err := OpenStore(1<<20, "", 64<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Write(0, [][]byte{bytes.Repeat([]byte("D"), 8192)})
	s.Flush()
	s.Write(4096, [][]byte{bytes.Repeat([]byte("V"), 100)}) // not flushed: half of a durable page
	s.Write(65536, [][]byte{bytes.Repeat([]byte("V"), 8192)})
	if got := s.Stats().VolatileBytes; got != 3*pageSize {
		t.Fatalf("volatile bytes %d, want %d", got, 3*pageSize)
	}
	if n := s.Cut(); n != 3 {
		t.Fatalf("cut put back %d pages, want 3", n)
	}
	if !bytes.Equal(s.Read(0, 8192), bytes.Repeat([]byte("D"), 8192)) {
		t.Fatal("a flushed page did not survive the cut intact")
	}
	if !bytes.Equal(s.Read(65536, 8192), make([]byte, 8192)) {
		t.Fatal("an unflushed write survived the cut")
	}
	if s.Stats().VolatileBytes != 0 {
		t.Fatal("the undo log is not empty after a cut")
	}
}

func TestStoreDestagesEarlyPastItsLimit(t *testing.T) {
	s, err := OpenStore(1<<20, "", 2*pageSize, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Write(0, [][]byte{bytes.Repeat([]byte("A"), 3*pageSize)})
	st := s.Stats()
	if st.Destaged != 1 || st.VolatileBytes != 0 {
		t.Fatalf("stats %+v: want one early destage and an empty log", st)
	}
	// Made durable early: a cut keeps it (a device may keep more than a flush promised, never less).
	s.Cut()
	if !bytes.Equal(s.Read(0, pageSize), bytes.Repeat([]byte("A"), pageSize)) {
		t.Fatal("a destaged write was dropped")
	}
}

func TestStoreDiscardZeroesAndIsUndone(t *testing.T) {
	s, _ := OpenStore(1<<20, "", 64<<20, true)
	defer s.Close()
	s.Write(0, [][]byte{bytes.Repeat([]byte("D"), 4*pageSize)})
	s.Flush()
	if err := s.Discard(100, 3*pageSize); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.Read(100, 3*pageSize), make([]byte, 3*pageSize)) || s.Read(99, 1)[0] != 'D' {
		t.Fatal("discard did not zero exactly its range")
	}
	s.Cut()
	if !bytes.Equal(s.Read(0, 4*pageSize), bytes.Repeat([]byte("D"), 4*pageSize)) {
		t.Fatal("an unflushed discard survived the cut")
	}
}

func TestUnitsCountEBSOperations(t *testing.T) {
	p := Params{OpUnitBytes: 256 << 10}
	for _, c := range []struct {
		size int
		want float64
	}{{4096, 1}, {8192, 1}, {256 << 10, 1}, {256<<10 + 1, 2}, {1 << 20, 4}} {
		if got := p.units(c.size); got != c.want {
			t.Errorf("units(%d) = %v, want %v", c.size, got, c.want)
		}
	}
}

// The budget holds over a window: I/Os offered far faster than the budget start no faster than it allows.
func TestReserveHoldsTheBudget(t *testing.T) {
	m := NewModel(Params{IOPS: 1000, BytesPerSecond: 1 << 30, BurstMs: 5})
	now := float64(monotonicNs())
	var last float64
	for i := 0; i < 2000; i++ {
		last = m.reserve(kRead, 1, 8192, now) // all offered at once
	}
	// 2,000 operations at 1,000 a second: the last starts about 2 s (less the 5 ms burst) after the first.
	if span := (last - now) / 1e9; math.Abs(span-1.994) > 0.002 {
		t.Fatalf("the 2,000th I/O starts %.4f s after the first, want 1.994", span)
	}
}

func TestReserveSharesOneBudgetBetweenReadsAndWrites(t *testing.T) {
	m := NewModel(Params{IOPS: 1000, BurstMs: 1})
	now := float64(monotonicNs())
	var last float64
	for i := 0; i < 1000; i++ {
		k := kRead
		if i%2 == 1 {
			k = kWrite
		}
		last = m.reserve(k, 1, 8192, now)
	}
	if span := (last - now) / 1e9; span < 0.99 {
		t.Fatalf("1,000 reads and writes together started within %.3f s on a budget of 1,000 a second", span)
	}
}

func TestBytesBudgetBindsLargeIOs(t *testing.T) {
	m := NewModel(Params{IOPS: 3000, BytesPerSecond: 125 << 20, OpUnitBytes: 256 << 10, BurstMs: 1})
	now := float64(monotonicNs())
	var last float64
	for i := 0; i < 125; i++ {
		last = m.reserve(kWrite, 4, 1<<20, now) // 125 MiB in 1 MiB writes: one second of bandwidth
	}
	if span := (last - now) / 1e9; math.Abs(span-0.991) > 0.01 {
		t.Fatalf("125 MiB started over %.3f s at 125 MiB/s, want about 0.99", span)
	}
}

func TestServeTakesTheModelsLatency(t *testing.T) {
	m := NewModel(Params{ReadLatencyUs: 2000, WriteLatencyUs: 3000})
	for _, c := range []struct {
		k    kind
		want time.Duration
	}{{kRead, 2 * time.Millisecond}, {kWrite, 3 * time.Millisecond}} {
		start := time.Now()
		m.Serve(c.k, 8192, monotonicNs(), func() {})
		if got := time.Since(start); got < c.want || got > c.want+20*time.Millisecond {
			t.Errorf("kind %d served in %v, want %v", c.k, got, c.want)
		}
	}
	if m.C.ModelledReads.Load() != 1 || m.C.ModelledWrites.Load() != 1 || m.C.ModelledUnits.Load() != 2 {
		t.Fatalf("counters %d reads, %d writes, %d units", m.C.ModelledReads.Load(), m.C.ModelledWrites.Load(), m.C.ModelledUnits.Load())
	}
}

func TestModelOffServesAtOnceAndCountsApart(t *testing.T) {
	m := NewModel(Params{IOPS: 1, ReadLatencyUs: 1e6})
	m.SetOn(false)
	start := time.Now()
	for i := 0; i < 100; i++ {
		m.Serve(kRead, 8192, monotonicNs(), func() {})
	}
	if time.Since(start) > 500*time.Millisecond {
		t.Fatal("the model off still held I/O")
	}
	if m.C.Reads.Load() != 100 || m.C.ModelledReads.Load() != 0 {
		t.Fatalf("%d reads, %d modelled", m.C.Reads.Load(), m.C.ModelledReads.Load())
	}
}

// An I/O the model admitted before a switch-off completes after it: it counts as admitted on the model at once, and as
// modelled only when it completes, so a window opened right after the switch sees it in the completion count but not
// in the admission count (what IoCap.prepare reads).
func TestAdmittedCountsOnArrivalNotCompletion(t *testing.T) {
	m := NewModel(Params{ReadLatencyUs: 200000})
	done := make(chan struct{})
	go func() { m.Serve(kRead, 8192, monotonicNs(), func() {}); close(done) }()
	for deadline := time.Now().Add(100 * time.Millisecond); m.C.ModelledAdmitted.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	m.SetOn(false)
	admitted, completed := m.C.ModelledAdmitted.Load(), m.C.ModelledReads.Load()
	m.Serve(kWrite, 8192, monotonicNs(), func() {}) // off: neither count moves
	<-done
	if admitted != 1 || completed != 0 {
		t.Fatalf("at the switch: %d admitted, %d completed; want 1 and 0", admitted, completed)
	}
	if got := m.C.ModelledAdmitted.Load(); got != 1 {
		t.Fatalf("%d admitted after the switch, want still 1", got)
	}
	if got := m.C.ModelledReads.Load(); got != 1 {
		t.Fatalf("%d modelled reads completed, want 1 (the one in flight at the switch)", got)
	}
}

func TestQueueDepthLimitsConcurrency(t *testing.T) {
	m := NewModel(Params{ReadLatencyUs: 20000, QueueDepth: 2})
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); m.Serve(kRead, 8192, monotonicNs(), func() {}) }()
	}
	wg.Wait()
	// Four I/Os of 20 ms, two at a time: two rounds.
	if got := time.Since(start); got < 40*time.Millisecond {
		t.Fatalf("four 20 ms I/Os at queue depth 2 took %v", got)
	}
	if m.C.QueueWaits.Load() < 2 {
		t.Fatalf("%d queue waits, want at least 2", m.C.QueueWaits.Load())
	}
}

func TestStoreZerosOverFreshPagesArePopulatedNotCopied(t *testing.T) {
	s, err := OpenStore(1<<20, "", 64<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Zeros over pages never written: nothing to copy or undo; a partial page is written as any other.
	s.Write(0, [][]byte{make([]byte, 4*pageSize)})
	s.Write(8*pageSize+10, [][]byte{make([]byte, 100)})
	if got := s.Stats().VolatileBytes; got != pageSize {
		t.Fatalf("volatile bytes %d after zeros over fresh pages, want one page (the partial one)", got)
	}
	// They are held as any written page is (a loaded host's WAL segments are): in memory, not left to fault later.
	resident := make([]byte, 6)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&s.data[0])), 6*pageSize, uintptr(unsafe.Pointer(&resident[0]))); errno != 0 {
		t.Fatal(errno)
	}
	if want := []byte{1, 1, 1, 1, 0, 0}; !bytes.Equal(resident, want) {
		t.Fatalf("pages resident %v after zeros over the first 4, want %v", resident, want)
	}
	// Zeros over data land, and a cut undoes them; a fresh page's first write is undone to zeros.
	s.Write(pageSize, [][]byte{bytes.Repeat([]byte("D"), 2*pageSize)})
	s.Flush()
	s.Write(pageSize, [][]byte{make([]byte, 2*pageSize)})
	s.Write(16*pageSize, [][]byte{bytes.Repeat([]byte("V"), pageSize)})
	if !bytes.Equal(s.Read(pageSize, 2*pageSize), make([]byte, 2*pageSize)) {
		t.Fatal("zeros written over data did not land")
	}
	if n := s.Cut(); n != 3 {
		t.Fatalf("cut put back %d pages, want 3", n)
	}
	if !bytes.Equal(s.Read(pageSize, 2*pageSize), bytes.Repeat([]byte("D"), 2*pageSize)) {
		t.Fatal("the cut did not put the durable data back under the unflushed zeros")
	}
	if !bytes.Equal(s.Read(16*pageSize, pageSize), make([]byte, pageSize)) {
		t.Fatal("an unflushed first write to a fresh page survived the cut")
	}
	// Zeros over a page written before (now zeros again after the cut) are logged like any write.
	s.Write(16*pageSize, [][]byte{make([]byte, pageSize)})
	if got := s.Stats().VolatileBytes; got != pageSize {
		t.Fatalf("volatile bytes %d after zeros over a page written before, want one page", got)
	}
}

func TestStoreWithoutPowerCutsCopiesNothingAndRefusesACut(t *testing.T) {
	s, err := OpenStore(1<<20, "", 64<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Write(0, [][]byte{bytes.Repeat([]byte("D"), 8192)})
	s.Flush()
	s.Write(0, [][]byte{bytes.Repeat([]byte("V"), 8192)}) // over written pages: an undoable store would copy them
	if got := s.Stats(); got.VolatileBytes != 0 || len(s.undo) != 0 || got.PowerCuts {
		t.Fatalf("a store without power cuts logged %d bytes (%d entries), powerCuts %v", got.VolatileBytes, len(s.undo), got.PowerCuts)
	}
	if !bytes.Equal(s.Read(0, 8192), bytes.Repeat([]byte("V"), 8192)) {
		t.Fatal("the write did not land")
	}
	c := &controller{fs: newVolumeFS(s, NewModel(Params{}))}
	reply := c.handle(request{Op: "cut"})
	if reply["ok"] != false || !strings.Contains(fmt.Sprint(reply["error"]), "--power-cuts=false") {
		t.Fatalf("a cut of a store without power cuts was not refused: %v", reply)
	}
	if c.fs.Dead() {
		t.Fatal("a refused cut left the volume dead")
	}
	if !bytes.Equal(s.Read(0, 8192), bytes.Repeat([]byte("V"), 8192)) {
		t.Fatal("a refused cut changed the volume")
	}
}

func TestCompensationSettlesOnAShortLatency(t *testing.T) {
	// The NVMe's 125 µs with 40 µs of path: the compensation takes the 40 µs (15 % alone would stop it at 19 µs).
	m := NewModel(Params{Name: "nvme", IOPS: 1e6, ReadLatencyUs: 125, WriteLatencyUs: 125})
	for i := 0; i < 60; i++ {
		r, _ := m.Compensation()
		m.Compensate(kRead, 125e3+40e3-float64(r), 0.3)
	}
	if r, _ := m.Compensation(); r < 39e3 || r > 41e3 {
		t.Fatalf("compensation %d ns after 60 windows; want about 40,000", r)
	}
	// A stall's mean does not take more than half the latency, nor on gp3's 1 ms more than 15 %.
	for i := 0; i < 60; i++ {
		m.Compensate(kRead, 10e6, 0.3)
	}
	if r, _ := m.Compensation(); r != 50e3 {
		t.Fatalf("compensation %d ns after long stalls; want the floor's 50,000", r)
	}
	g := NewModel(Params{Name: "gp3", IOPS: 1e6, ReadLatencyUs: 1000})
	for i := 0; i < 60; i++ {
		g.Compensate(kRead, 10e6, 0.3)
	}
	if r, _ := g.Compensation(); r != 150e3 {
		t.Fatalf("gp3 compensation %d ns after long stalls; want 15 %%, 150,000", r)
	}
}
