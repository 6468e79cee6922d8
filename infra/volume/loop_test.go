package main

// The server's own loop (loop.go) on a real FUSE mount: needs root and /dev/fuse (skipped without them). The file is
// opened directly on the mount (FOPEN_DIRECT_IO: no page cache), so each pread and pwrite is one request. The client
// is this process, so the image is opened with open(2), not os.OpenFile: Go's poller would register the fd with
// epoll_ctl, which on a FUSE file asks the server (FUSE_POLL) from a raw system call that holds its P, and a garbage
// collection waiting for that P would stop the server's loop from answering (a deadlock no other client can cause).

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// image is the volume's image opened on the mount, read and written with pread(2) and pwrite(2).
type image int

func (f image) WriteAt(b []byte, off int64) (int, error) { return unix.Pwrite(int(f), b, off) }
func (f image) ReadAt(b []byte, off int64) (int, error)  { return unix.Pread(int(f), b, off) }
func (f image) Sync() error                              { return unix.Fsync(int(f)) }

func mountTestLoop(t *testing.T, p Params, powerCuts bool) (*loopServer, *volumeFS, image) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting FUSE needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	dir := t.TempDir()
	store, err := OpenStore(16<<20, "", 64<<20, powerCuts)
	if err != nil {
		t.Fatal(err)
	}
	fs := newVolumeFS(store, NewModel(p))
	l, err := mountLoop(fs, dir, mountOptions(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	go l.Serve()
	fd, err := unix.Open(filepath.Join(dir, ImageName), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		t.Fatal(err)
	}
	f := image(fd)
	t.Cleanup(func() {
		unix.Close(fd)
		if err := l.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		store.Close()
	})
	return l, fs, f
}

// readPages reads pages 0 to pages-1 (4 KiB each) from `readers` goroutines at once, reader r taking every
// readers-th page from r, and returns when all are read.
func readPages(t *testing.T, f image, pages, readers int) {
	t.Helper()
	var wg sync.WaitGroup
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			buf := make([]byte, 4096)
			for i := r; i < pages; i += readers {
				if _, err := f.ReadAt(buf, int64(i)*4096); err != nil {
					t.Error(err)
					return
				}
			}
		}(r)
	}
	wg.Wait()
}

func TestLoopServesDataAtTheModelsLatency(t *testing.T) {
	_, fs, f := mountTestLoop(t, Params{Name: "t", IOPS: 100000, ReadLatencyUs: 3000, WriteLatencyUs: 4000}, false)
	page := bytes.Repeat([]byte("storage-lab"), 745)[:8192]
	start := time.Now()
	if _, err := f.WriteAt(page, 8192); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 4*time.Millisecond {
		t.Fatalf("a write took %v, under the model's 4 ms", took)
	}
	got := make([]byte, 8192)
	start = time.Now()
	if _, err := f.ReadAt(got, 8192); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 3*time.Millisecond {
		t.Fatalf("a read took %v, under the model's 3 ms", took)
	}
	if !bytes.Equal(got, page) {
		t.Fatal("the read did not return what was written")
	}
	if r, w := fs.model.C.ModelledReads.Load(), fs.model.C.ModelledWrites.Load(); r != 1 || w != 1 {
		t.Fatalf("modelled reads %d, writes %d; want 1 and 1", r, w)
	}
}

func TestLoopQueuesBeyondTheQueueDepthInArrivalOrder(t *testing.T) {
	// Two slots, 20 ms each: eight reads take at least four rounds, however their goroutines start, and some waited.
	_, fs, f := mountTestLoop(t, Params{Name: "t", IOPS: 100000, ReadLatencyUs: 20000, QueueDepth: 2}, false)
	start := time.Now()
	readPages(t, f, 8, 8)
	if took := time.Since(start); took < 80*time.Millisecond {
		t.Fatalf("eight reads through two slots of 20 ms took %v, under 80 ms", took)
	}
	if waits := fs.model.C.QueueWaits.Load(); waits < 1 {
		t.Fatal("no read waited for a slot")
	}
	if n, _ := fs.model.Queue(); n != 0 {
		t.Fatalf("%d I/Os still counted in the server after every reply", n)
	}
}

func TestLoopHoldsTheBudget(t *testing.T) {
	// 500 IOPS: 100 reads from 8 readers take about 0.19 s after the 5 ms burst, never less.
	_, fs, f := mountTestLoop(t, Params{Name: "t", IOPS: 500, ReadLatencyUs: 100, BurstMs: 5}, false)
	start := time.Now()
	readPages(t, f, 100, 8)
	if took := time.Since(start); took < 190*time.Millisecond {
		t.Fatalf("100 reads at 500 IOPS took %v, under 190 ms", took)
	}
	if got := fs.model.C.ModelledUnits.Load(); got != 100 {
		t.Fatalf("%d operations charged; want 100", got)
	}
}

func TestLoopPowerCutDropsWhatWasNotFlushed(t *testing.T) {
	_, fs, f := mountTestLoop(t, Params{Name: "t", IOPS: 100000, ReadLatencyUs: 100, WriteLatencyUs: 100, FlushLatencyUs: 100}, true)
	durable := bytes.Repeat([]byte{1}, 4096)
	volatile := bytes.Repeat([]byte{2}, 4096)
	if _, err := f.WriteAt(durable, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(volatile, 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(volatile, 0); err != nil {
		t.Fatal(err)
	}
	fs.Cut()
	if _, err := f.ReadAt(make([]byte, 4096), 0); err == nil {
		t.Fatal("a read succeeded while the power was cut")
	}
	fs.PowerOn()
	got := make([]byte, 8192)
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:4096], durable) || !bytes.Equal(got[4096:], make([]byte, 4096)) {
		t.Fatalf("after the cut: page 0 starts %v (want the flushed 1s), page 1 starts %v (want zeros)", got[:4], got[4096:4100])
	}
}
