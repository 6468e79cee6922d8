package main

// When I/Os complete: one thread keeps every pending completion in a heap and sleeps until the earliest, to the
// microsecond (ppoll on an eventfd, with the thread's timer slack at 1 ns), then wakes the I/Os that are due. An I/O
// waits on a channel meanwhile, holding no thread: a blocking sleep per I/O instead (clock_nanosleep in the request's
// goroutine) parks a thread per I/O in flight and costs a hand-off of the Go scheduler each time, about four times
// the CPU at 3,000 IOPS (bench/volume-fidelity.ts). Go's own timers round sub-millisecond sleeps up to about 1 ms.

import (
	"container/heap"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

type waiter struct {
	at   int64
	done chan struct{}
}

type waiters []*waiter

func (w waiters) Len() int           { return len(w) }
func (w waiters) Less(i, j int) bool { return w[i].at < w[j].at }
func (w waiters) Swap(i, j int)      { w[i], w[j] = w[j], w[i] }
func (w *waiters) Push(x any)        { *w = append(*w, x.(*waiter)) }
func (w *waiters) Pop() any {
	old := *w
	n := len(old)
	x := old[n-1]
	old[n-1] = nil
	*w = old[:n-1]
	return x
}

// Timer wakes waiters at their deadlines (ns, monotonic clock).
type Timer struct {
	mu      sync.Mutex
	pending waiters
	// The earliest deadline the timer thread sleeps towards; a sooner one kicks it awake through the eventfd.
	sleepingUntil int64
	efd           int
	chans         sync.Pool
}

// NewTimer starts the timer thread.
func NewTimer() (*Timer, error) {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	t := &Timer{efd: efd}
	t.chans.New = func() any { return make(chan struct{}, 1) }
	go t.run()
	return t, nil
}

// Wait blocks until the monotonic clock reaches `at`.
func (t *Timer) Wait(at int64) {
	if at <= monotonicNs() {
		return
	}
	w := &waiter{at: at, done: t.chans.Get().(chan struct{})}
	t.mu.Lock()
	heap.Push(&t.pending, w)
	kick := t.sleepingUntil == 0 || at < t.sleepingUntil
	t.mu.Unlock()
	if kick {
		var one = [8]byte{1}
		_, _ = unix.Write(t.efd, one[:])
	}
	<-w.done
	t.chans.Put(w.done)
}

func (t *Timer) run() {
	runtime.LockOSThread() // the precise slack below is this thread's
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	fds := []unix.PollFd{{Fd: int32(t.efd), Events: unix.POLLIN}}
	var drain [8]byte
	for {
		now := monotonicNs()
		t.mu.Lock()
		for len(t.pending) > 0 && t.pending[0].at <= now {
			w := heap.Pop(&t.pending).(*waiter)
			w.done <- struct{}{}
		}
		var timeout *unix.Timespec
		if len(t.pending) > 0 {
			t.sleepingUntil = t.pending[0].at
			ts := unix.NsecToTimespec(t.pending[0].at - now)
			timeout = &ts
		} else {
			t.sleepingUntil = 0
		}
		t.mu.Unlock()
		n, _ := unix.Ppoll(fds, timeout, nil)
		if n > 0 {
			_, _ = unix.Read(t.efd, drain[:])
		}
	}
}
