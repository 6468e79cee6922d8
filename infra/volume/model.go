package main

// The device model: when each I/O completes.
//
// An I/O is served in three steps, timed from the moment the request reaches this server (its arrival):
//  1. a queue slot: the device serves at most QueueDepth I/Os at once; beyond that an I/O waits (counted);
//  2. its tokens: every budget it draws from (the shared IOPS and bytes of an EBS volume, or per-direction budgets)
//     gives it a start time by virtual scheduling (GCRA): a budget of `rate` units a second lets `cost` units start
//     no sooner than its theoretical arrival time minus a small burst tolerance, so over any window W it passes at
//     most rate x (W + burst) units. An I/O that had to wait for tokens is a throttle wait (counted, with its time);
//  3. its service latency: it completes at start + the model's latency for its kind. The latency is a floor that
//     the path's own overhead (this server, the kernel's FUSE and loop layers) fills rather than adds to: the server
//     aims for arrival-based completion, minus the overhead it measures (below), so the block device sees the model.
//
// EBS counts an I/O of up to 256 KiB as one operation and a larger one in 256 KiB units (OpUnitBytes).

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Params are one device's properties (common/model/devices.ts writes them; docs/storage-emulation.md cites sources).
type Params struct {
	Name string `json:"name"`
	// Shared budgets of reads and writes together (EBS): operations and bytes a second; 0 = none.
	IOPS           float64 `json:"iops"`
	BytesPerSecond float64 `json:"bytesPerSecond"`
	// Per-direction budgets (an instance store's published read and write IOPS and bandwidth); 0 = none.
	ReadIOPS            float64 `json:"readIops"`
	WriteIOPS           float64 `json:"writeIops"`
	ReadBytesPerSecond  float64 `json:"readBytesPerSecond"`
	WriteBytesPerSecond float64 `json:"writeBytesPerSecond"`
	// An I/O counts ceil(size / OpUnitBytes) operations (EBS: 256 KiB); 0 = every I/O is one.
	OpUnitBytes int64 `json:"opUnitBytes"`
	// Service latency of one I/O, from its start, in microseconds.
	ReadLatencyUs  float64 `json:"readLatencyUs"`
	WriteLatencyUs float64 `json:"writeLatencyUs"`
	FlushLatencyUs float64 `json:"flushLatencyUs"`
	// I/Os in service at once; 0 = no limit.
	QueueDepth int `json:"queueDepth"`
	// How far a budget may run ahead after idling (the bucket's depth), in milliseconds.
	BurstMs float64 `json:"burstMs"`
}

type kind int

const (
	kRead kind = iota
	kWrite
	kFlush
	kDiscard
)

// bucket is one budget under virtual scheduling: tat is its theoretical arrival time (ns, monotonic).
type bucket struct {
	rate  float64 // units a second
	tat   float64
	burst float64 // ns
}

func (b *bucket) earliest(now float64) float64 {
	if b.rate <= 0 {
		return now
	}
	return math.Max(now, b.tat-b.burst)
}

func (b *bucket) take(start, units float64) {
	if b.rate <= 0 {
		return
	}
	b.tat = math.Max(b.tat, start) + units/b.rate*1e9
}

// Counters are cumulative; the lab reads them at both ends of a window.
type Counters struct {
	Reads, Writes, Flushes, Discards      atomic.Uint64
	ReadBytes, WriteBytes, DiscardBytes   atomic.Uint64
	ModelledReads, ModelledWrites         atomic.Uint64 // served while the model was on
	ModelledUnits                         atomic.Uint64 // operations charged (256 KiB units), model on
	ModelledReadBytes, ModelledWriteBytes atomic.Uint64
	// Reads and writes admitted while the model was on, counted when Serve reads the switch (the others count at
	// completion): a window between two switches holds exactly the I/O the model decided on in it, none in flight
	// from before.
	ModelledAdmitted                              atomic.Uint64
	ThrottleWaits                                 atomic.Uint64 // I/Os that waited for tokens
	ThrottleWaitNs                                atomic.Uint64
	QueueWaits                                    atomic.Uint64 // I/Os that waited for a queue slot
	QueueWaitNs                                   atomic.Uint64
	ReadServiceNs, WriteServiceNs, FlushServiceNs atomic.Uint64 // arrival to reply, summed
	Errors                                        atomic.Uint64 // I/Os refused (power cut)
}

// Model times I/Os for one volume.
type Model struct {
	mu      sync.Mutex
	p       Params
	on      bool
	buckets struct{ ops, bytes, rOps, wOps, rBytes, wBytes bucket }
	slots   chan struct{}

	C Counters

	// In flight: the number of I/Os in the server now, and its integral over time (ns x I/Os) for the mean queue.
	inflightMu   sync.Mutex
	inflight     int64
	inflightAt   int64
	inflightArea float64

	// Completions per second while modelled, by the second they completed in: the budget as delivered.
	secMu     sync.Mutex
	secStart  int64
	secUnits  float64
	secMax    float64
	secBudget float64

	// Compensation (ns) per kind, subtracted from the service latency: what the path adds outside the model's sleep
	// (the kernel's FUSE and loop layers, the server's own wake-up), measured on the block device (control.go).
	compRead, compWrite atomic.Int64
}

// monotonicNs is CLOCK_MONOTONIC in ns (the timerfd's clock, timer.go), read through Go's clock (the vDSO, no
// system call: an I/O reads it several times): the offset between the two is taken once.
func monotonicNs() int64 { return monotonicBase + int64(time.Since(monotonicStart)) }

var monotonicStart, monotonicBase = func() (time.Time, int64) {
	start := time.Now()
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return start, ts.Nano()
}()

// NewModel starts with the model on.
func NewModel(p Params) *Model {
	m := &Model{}
	m.Set(p)
	m.on = true
	return m
}

// Set replaces the parameters; budgets start afresh.
func (m *Model) Set(p Params) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.BurstMs <= 0 {
		p.BurstMs = 5
	}
	m.p = p
	burst := p.BurstMs * 1e6
	b := &m.buckets
	b.ops = bucket{rate: p.IOPS, burst: burst}
	b.bytes = bucket{rate: p.BytesPerSecond, burst: burst}
	b.rOps = bucket{rate: p.ReadIOPS, burst: burst}
	b.wOps = bucket{rate: p.WriteIOPS, burst: burst}
	b.rBytes = bucket{rate: p.ReadBytesPerSecond, burst: burst}
	b.wBytes = bucket{rate: p.WriteBytesPerSecond, burst: burst}
	if p.QueueDepth > 0 {
		m.slots = make(chan struct{}, p.QueueDepth)
	} else {
		m.slots = nil
	}
	m.secMu.Lock()
	m.secBudget = p.IOPS
	m.secMu.Unlock()
}

// Params returns the parameters in use.
func (m *Model) Params() Params {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.p
}

// SetOn switches the model on (the class's figures) or off (preparation runs uncapped); a budget starts afresh.
func (m *Model) SetOn(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if on && !m.on {
		now := float64(monotonicNs())
		for _, b := range []*bucket{&m.buckets.ops, &m.buckets.bytes, &m.buckets.rOps, &m.buckets.wOps, &m.buckets.rBytes, &m.buckets.wBytes} {
			b.tat = now
		}
	}
	m.on = on
}

func (m *Model) On() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.on
}

// units is what an I/O of `size` bytes costs in operations.
func (p *Params) units(size int) float64 {
	if p.OpUnitBytes <= 0 || size <= 0 {
		return 1
	}
	return math.Max(1, math.Ceil(float64(size)/float64(p.OpUnitBytes)))
}

func (m *Model) enter(now int64) {
	m.inflightMu.Lock()
	m.inflightArea += float64(m.inflight) * float64(now-m.inflightAt)
	m.inflightAt = now
	m.inflight++
	m.inflightMu.Unlock()
}

func (m *Model) leave(now int64) {
	m.inflightMu.Lock()
	m.inflightArea += float64(m.inflight) * float64(now-m.inflightAt)
	m.inflightAt = now
	m.inflight--
	m.inflightMu.Unlock()
}

// Queue returns the I/Os in the server now and the integral of that number over time (seconds x I/Os).
func (m *Model) Queue() (int64, float64) {
	now := monotonicNs()
	m.inflightMu.Lock()
	defer m.inflightMu.Unlock()
	area := m.inflightArea + float64(m.inflight)*float64(now-m.inflightAt)
	return m.inflight, area / 1e9
}

// ticket is one I/O between its start and its completion.
type ticket struct {
	k        kind
	size     int
	arrival  int64
	units    float64
	modelled bool
	// The queue slot it holds (a channel of the model's at its arrival), or nil.
	slots chan struct{}
	// When the model says it completes (ns, monotonic); 0 when not modelled (at once).
	deadline int64
}

// Serve runs one I/O through the model: `work` (the data copy) runs when the I/O starts, and Serve returns when the
// model says it completes. `arrival` is when the request reached the server. The server's own loop (loop.go) runs
// the same steps without blocking: arrive, a queue slot, start, and finish at the deadline.
func (m *Model) Serve(k kind, size int, arrival int64, work func()) {
	m.enter(arrival)
	on, slots := m.arrive(k)
	if slots != nil {
		select {
		case slots <- struct{}{}:
		default:
			t := monotonicNs()
			slots <- struct{}{}
			m.C.QueueWaits.Add(1)
			m.C.QueueWaitNs.Add(uint64(monotonicNs() - t))
		}
	}
	t := m.start(k, size, arrival, on, slots, work)
	if t.modelled {
		completions().Wait(t.deadline)
	}
	m.finish(t)
}

// queueFull: the model is on and every slot of its queue depth is held (an I/O arriving now would wait).
func (m *Model) queueFull() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.on && m.slots != nil && len(m.slots) == cap(m.slots)
}

// arrive reads the model's switch for an I/O that has entered the server (enter): whether it is modelled, and the
// queue whose slot it must hold first (nil: none, or not modelled).
func (m *Model) arrive(k kind) (bool, chan struct{}) {
	m.mu.Lock()
	on := m.on
	slots := m.slots
	m.mu.Unlock()
	if !on {
		return false, nil
	}
	if k == kRead || k == kWrite {
		m.C.ModelledAdmitted.Add(1)
	}
	return true, slots
}

// start takes an I/O that holds its queue slot (`slots`, or nil) from now: its tokens, its completion, and its data
// (`work`, run now).
func (m *Model) start(k kind, size int, arrival int64, on bool, slots chan struct{}, work func()) ticket {
	t := ticket{k: k, size: size, arrival: arrival, modelled: on, slots: slots}
	if !on {
		work()
		return t
	}
	m.mu.Lock()
	p := m.p
	m.mu.Unlock()
	now := monotonicNs()
	var start float64
	var latency float64
	switch k {
	case kRead, kWrite:
		t.units = p.units(size)
		start = m.reserve(k, t.units, float64(size), float64(now))
		if k == kRead {
			latency = p.ReadLatencyUs * 1e3
		} else {
			latency = p.WriteLatencyUs * 1e3
		}
	case kFlush:
		start = float64(now)
		latency = p.FlushLatencyUs * 1e3
	default: // a discard is not an I/O on EBS's meter: it frees space, it does not move data
		start = float64(now)
	}
	if wait := start - float64(now); wait > 0 {
		m.C.ThrottleWaits.Add(1)
		m.C.ThrottleWaitNs.Add(uint64(wait))
	}
	// The I/O's completion: its start, or its arrival where it did not wait, plus the latency, less what the path
	// adds outside this wait (so the block device sees the model's latency, not the model's plus the path's). Its data
	// moves now: I/Os in flight together have no order a device promises, and one cut by a power cut may or may not
	// have landed.
	base := math.Max(start, float64(arrival))
	t.deadline = int64(base + latency - float64(m.compensation(k)))
	work()
	return t
}

// finish ends an I/O at its completion: its slot back, its counts.
func (m *Model) finish(t ticket) {
	if t.slots != nil {
		<-t.slots
	}
	done := monotonicNs()
	m.count(t.k, t.size, t.modelled, t.units)
	m.leave(done)
	m.serviceTime(t.k, done-t.arrival)
	if t.modelled && t.units > 0 {
		m.completed(done, t.units)
	}
}

// reserve takes the I/O's tokens from every budget it draws from and returns when it may start (ns).
func (m *Model) reserve(k kind, units, bytes, now float64) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := &m.buckets
	dir := []*bucket{&b.rOps, &b.rBytes}
	if k == kWrite {
		dir = []*bucket{&b.wOps, &b.wBytes}
	}
	start := math.Max(b.ops.earliest(now), b.bytes.earliest(now))
	start = math.Max(start, math.Max(dir[0].earliest(now), dir[1].earliest(now)))
	b.ops.take(start, units)
	b.bytes.take(start, bytes)
	dir[0].take(start, units)
	dir[1].take(start, bytes)
	return start
}

func (m *Model) count(k kind, size int, modelled bool, units float64) {
	c := &m.C
	switch k {
	case kRead:
		c.Reads.Add(1)
		c.ReadBytes.Add(uint64(size))
		if modelled {
			c.ModelledReads.Add(1)
			c.ModelledReadBytes.Add(uint64(size))
		}
	case kWrite:
		c.Writes.Add(1)
		c.WriteBytes.Add(uint64(size))
		if modelled {
			c.ModelledWrites.Add(1)
			c.ModelledWriteBytes.Add(uint64(size))
		}
	case kFlush:
		c.Flushes.Add(1)
	case kDiscard:
		c.Discards.Add(1)
		c.DiscardBytes.Add(uint64(size))
	}
	if modelled && units > 0 {
		c.ModelledUnits.Add(uint64(units))
	}
}

func (m *Model) serviceTime(k kind, ns int64) {
	switch k {
	case kRead:
		m.C.ReadServiceNs.Add(uint64(ns))
	case kWrite:
		m.C.WriteServiceNs.Add(uint64(ns))
	case kFlush:
		m.C.FlushServiceNs.Add(uint64(ns))
	}
}

// completed counts units in the whole second (of the monotonic clock) they completed in, keeping the busiest second.
func (m *Model) completed(at int64, units float64) {
	sec := at / 1e9
	m.secMu.Lock()
	if sec != m.secStart {
		m.secStart = sec
		m.secUnits = 0
	}
	m.secUnits += units
	if m.secUnits > m.secMax {
		m.secMax = m.secUnits
	}
	m.secMu.Unlock()
}

// BusiestSecond returns the most operations completed in one second while modelled, and resets it.
func (m *Model) BusiestSecond(reset bool) float64 {
	m.secMu.Lock()
	defer m.secMu.Unlock()
	v := m.secMax
	if reset {
		m.secMax = m.secUnits
	}
	return v
}

func (m *Model) compensation(k kind) int64 {
	switch k {
	case kRead:
		return m.compRead.Load()
	case kWrite:
		return m.compWrite.Load()
	}
	return 0
}

// MaxCompensation is the largest share of a latency the compensation may take: the path's usual overhead (tens of
// microseconds) fits in it, while a busy machine's rare long stalls are not made up for by serving the typical I/O
// faster than the model: they stay in the mean, where the lab's fio table shows them.
const MaxCompensation = 0.15

// CompensationFloorNs: a short latency's 15 % (19 µs of the NVMe's 125 µs) is less than the path's usual overhead
// (about 40 µs an I/O at QD 1 on these machines: docs/storage-emulation.md, "Measured against the model"), so the
// compensation may always take up to this much, though never more than half the latency.
const CompensationFloorNs = 50_000

// compensationCap is the most the compensation may take off a latency of `target` ns.
func compensationCap(target float64) float64 {
	return math.Max(MaxCompensation*target, math.Min(0.5*target, CompensationFloorNs))
}

// Compensate moves a kind's compensation by `gain` of the error between the latency the block device observed
// (ns, a mean over a window of unthrottled I/Os) and the model's; an integral controller, so the mean settles on
// the model whatever the path's overhead is, within [0, compensationCap].
func (m *Model) Compensate(k kind, observedNs float64, gain float64) {
	p := m.Params()
	target := p.ReadLatencyUs * 1e3
	c := &m.compRead
	if k == kWrite {
		target = p.WriteLatencyUs * 1e3
		c = &m.compWrite
	}
	next := float64(c.Load()) + gain*(observedNs-target)
	c.Store(int64(math.Min(compensationCap(target), math.Max(0, next))))
}

// Compensation returns the read and write compensations (ns).
func (m *Model) Compensation() (int64, int64) { return m.compRead.Load(), m.compWrite.Load() }

var (
	timerOnce sync.Once
	timer     *Timer
)

// completions is the process's one timer of I/O completions (timer.go).
func completions() *Timer {
	timerOnce.Do(func() {
		t, err := NewTimer()
		if err != nil {
			panic(err)
		}
		timer = t
	})
	return timer
}
