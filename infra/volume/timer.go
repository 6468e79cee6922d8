package main

// When I/Os complete under go-fuse's server (--serve go-fuse; the server's own loop, loop.go, keeps its own heap and
// timerfd on its one thread): every pending completion waits in a heap, and one timerfd (CLOCK_MONOTONIC, absolute, to the
// nanosecond) is armed for the earliest. The timer's goroutine reads the timerfd through Go's network poller, so it
// holds no thread while it waits: when the timerfd fires, the thread that polls wakes it and then runs the I/Os it
// readies itself, on the same thread. An I/O waits on a channel meanwhile, holding no thread either.
//
// Measured against the alternatives (bench/volume-fidelity.ts, docs/storage-emulation.md "What the device costs"):
// a thread of its own sleeping in ppoll on an eventfd spent about a third of the server's CPU at 3,000 IOPS in the Go
// scheduler's hand-offs (each wake-up needed a second thread to run the I/O, and a thread in a system call made the
// runtime's monitor poll every 20 µs); a blocking sleep per I/O (clock_nanosleep in the request's goroutine) cost
// about four times that. Go's own timers round sub-millisecond sleeps up to about 1 ms.

import (
	"container/heap"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

type waiter struct {
	at   int64
	done chan struct{}
}

// byDeadline is a min-heap (container/heap) of items by their deadline (ns): the pending completions of both
// servers, this timer's waiters and the loop's replies (loop.go).
type byDeadline[T any] struct {
	items []T
	at    func(T) int64
}

func (h *byDeadline[T]) Len() int           { return len(h.items) }
func (h *byDeadline[T]) Less(i, j int) bool { return h.at(h.items[i]) < h.at(h.items[j]) }
func (h *byDeadline[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *byDeadline[T]) Push(x any)         { h.items = append(h.items, x.(T)) }
func (h *byDeadline[T]) Pop() any {
	n := len(h.items)
	x := h.items[n-1]
	var zero T
	h.items[n-1] = zero
	h.items = h.items[:n-1]
	return x
}

// first is the item due soonest; the heap is not empty.
func (h *byDeadline[T]) first() T { return h.items[0] }

// Timer wakes waiters at their deadlines (ns, monotonic clock).
type Timer struct {
	mu      sync.Mutex
	pending byDeadline[*waiter]
	// The deadline the timerfd is armed for; 0: disarmed. A sooner one re-arms it.
	armedAt int64
	fd      int
	file    *os.File // fd, non-blocking, read through the network poller
	chans   sync.Pool
}

// NewTimer starts the timer's goroutine.
func NewTimer() (*Timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	t := &Timer{fd: fd, file: os.NewFile(uintptr(fd), "timerfd"), pending: byDeadline[*waiter]{at: func(w *waiter) int64 { return w.at }}}
	t.chans.New = func() any { return make(chan struct{}, 1) }
	go t.run()
	return t, nil
}

// arm sets the timerfd to fire at `at` (a time already past fires at once); t.mu is held.
func (t *Timer) arm(at int64) {
	t.armedAt = at
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(at)}
	if err := unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		panic(err) // only a bad fd or value: a bug
	}
}

// Wait blocks until the monotonic clock reaches `at`.
func (t *Timer) Wait(at int64) {
	if at <= monotonicNs() {
		return
	}
	w := &waiter{at: at, done: t.chans.Get().(chan struct{})}
	t.mu.Lock()
	heap.Push(&t.pending, w)
	if t.armedAt == 0 || at < t.armedAt {
		t.arm(at)
	}
	t.mu.Unlock()
	<-w.done
	t.chans.Put(w.done)
}

func (t *Timer) run() {
	var expirations [8]byte
	for {
		// Blocks in the poller until the timerfd fires; a firing for a deadline since moved is harmless: the loop
		// wakes what is due, and re-arms for the earliest left.
		if _, err := t.file.Read(expirations[:]); err != nil {
			panic(err)
		}
		now := monotonicNs()
		t.mu.Lock()
		for t.pending.Len() > 0 && t.pending.first().at <= now {
			w := heap.Pop(&t.pending).(*waiter)
			w.done <- struct{}{}
		}
		if t.pending.Len() > 0 {
			t.arm(t.pending.first().at)
		} else {
			t.armedAt = 0
		}
		t.mu.Unlock()
	}
}
