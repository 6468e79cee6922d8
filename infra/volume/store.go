package main

// The volume's bytes, and what a power cut keeps of them.
//
// The bytes live in one mapping: anonymous memory (RAM, the default) or a sparse file on the machine's disk when the
// volume does not fit in memory. Either way the machine's disk is never in the I/O path the model times: the model
// decides when an I/O completes, and a file backing is written through the server's page cache without fsync (the
// durability a power cut tests is the model's, below, not the file's).
//
// Durability is tracked as LazyFS tracks it (dsrhaslab/lazyfs: writes stay volatile until the application's fsync),
// turned around for a block device: a write lands in the mapping at once, and the first write to a page after a flush
// saves the page's durable content in an undo log. A flush (the loop device turns the file system's FLUSH/FUA into an
// fsync of its backing file, which reaches this server as FUSE_FSYNC) empties the log: everything written before it
// is durable. A power cut puts every logged page back: what the volume holds afterwards is exactly what was durable.
// A device may make writes durable sooner than asked (a disk's cache destages on its own), so a log that outgrows
// its limit is emptied early and counted; durability is then only ever more than a flush promised, never less.

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

const pageSize = 4096

// Store holds a volume's bytes and its undo log of writes not yet durable.
type Store struct {
	data []byte
	size int64
	file *os.File // nil: RAM

	mu            sync.Mutex
	undo          map[int64][]byte // page index -> the page's durable content
	volatileLimit int64            // bytes of undo log before it is emptied early (destaged)
	pages         sync.Pool

	// Counters (under mu).
	destaged      uint64 // times the undo log outgrew its limit and was made durable early
	cutPages      uint64 // pages put back by power cuts, in total
	volatileBytes int64  // bytes in the undo log now
}

// OpenStore maps a volume of `size` bytes: backing "" keeps it in RAM, else in that (sparse) file.
func OpenStore(size int64, backing string, volatileLimit int64) (*Store, error) {
	if size <= 0 || size%pageSize != 0 {
		return nil, fmt.Errorf("volume size %d is not a positive multiple of %d", size, pageSize)
	}
	s := &Store{size: size, undo: map[int64][]byte{}, volatileLimit: volatileLimit}
	s.pages.New = func() any { return make([]byte, pageSize) }
	var err error
	if backing == "" {
		s.data, err = unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
		if err != nil {
			return nil, fmt.Errorf("mapping %d bytes of memory: %w", size, err)
		}
	} else {
		s.file, err = os.OpenFile(backing, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, err
		}
		if err = s.file.Truncate(size); err != nil {
			return nil, err
		}
		s.data, err = unix.Mmap(int(s.file.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return nil, fmt.Errorf("mapping %s: %w", backing, err)
		}
	}
	// Random 8 KiB writes must not each fault in a 2 MiB huge page: the volume's memory is what it holds.
	_ = unix.Madvise(s.data, unix.MADV_NOHUGEPAGE)
	_ = unix.Madvise(s.data, unix.MADV_RANDOM)
	return s, nil
}

// Close unmaps the volume (its RAM goes back to the machine) and closes a backing file.
func (s *Store) Close() {
	if s.data != nil {
		_ = unix.Munmap(s.data)
		s.data = nil
	}
	if s.file != nil {
		_ = s.file.Close()
	}
}

// clamp limits [off, off+n) to the volume.
func (s *Store) clamp(off int64, n int) int {
	if off >= s.size || off < 0 {
		return 0
	}
	if rest := s.size - off; int64(n) > rest {
		return int(rest)
	}
	return n
}

// Read returns the bytes at off (a view of the mapping, no copy).
func (s *Store) Read(off int64, n int) []byte {
	n = s.clamp(off, n)
	return s.data[off : off+int64(n)]
}

// Write copies bufs to off, logging the durable content of each page it changes first.
func (s *Store) Write(off int64, bufs [][]byte) int {
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	n := s.clamp(off, total)
	if n == 0 {
		return 0
	}
	s.mu.Lock()
	s.logPages(off, int64(n))
	at := off
	left := n
	for _, b := range bufs {
		if left == 0 {
			break
		}
		if len(b) > left {
			b = b[:left]
		}
		copy(s.data[at:], b)
		at += int64(len(b))
		left -= len(b)
	}
	s.mu.Unlock()
	return n
}

// Discard zeroes [off, off+n) and gives whole pages back (memory, or the file's blocks); a discard is a write too.
func (s *Store) Discard(off int64, n int64) error {
	n = int64(s.clamp(off, int(min(n, s.size))))
	if n == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logPages(off, n)
	first := (off + pageSize - 1) / pageSize * pageSize
	last := (off + n) / pageSize * pageSize
	if first >= last {
		clear(s.data[off : off+n])
		return nil
	}
	clear(s.data[off:first])
	clear(s.data[last : off+n])
	if s.file == nil {
		return unix.Madvise(s.data[first:last], unix.MADV_DONTNEED)
	}
	return unix.Fallocate(int(s.file.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, first, last-first)
}

// logPages saves the durable content of every page in [off, off+n) not logged since the last flush. Under mu.
func (s *Store) logPages(off, n int64) {
	for p := off / pageSize; p <= (off+n-1)/pageSize; p++ {
		if _, ok := s.undo[p]; ok {
			continue
		}
		page := s.pages.Get().([]byte)
		copy(page, s.data[p*pageSize:(p+1)*pageSize])
		s.undo[p] = page
		s.volatileBytes += pageSize
	}
	if s.volatileBytes > s.volatileLimit {
		s.destaged++
		s.forgetLocked()
	}
}

// Flush makes every write so far durable.
func (s *Store) Flush() {
	s.mu.Lock()
	s.forgetLocked()
	s.mu.Unlock()
}

func (s *Store) forgetLocked() {
	for p, page := range s.undo {
		s.pages.Put(page) //nolint:staticcheck // a fixed-size page, reused
		delete(s.undo, p)
	}
	s.volatileBytes = 0
}

// Cut puts back the durable content of every page written since the last flush; it returns how many pages it put
// back. The caller makes sure no I/O is in flight.
func (s *Store) Cut() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.undo)
	for p, page := range s.undo {
		copy(s.data[p*pageSize:(p+1)*pageSize], page)
	}
	s.cutPages += uint64(n)
	s.forgetLocked()
	return n
}

// StoreStats is what the store reports.
type StoreStats struct {
	VolatileBytes int64  `json:"volatileBytes"`
	Destaged      uint64 `json:"destaged"`
	CutPages      uint64 `json:"cutPages"`
	Backing       string `json:"backing"`
}

func (s *Store) Stats() StoreStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	backing := "ram"
	if s.file != nil {
		backing = "file"
	}
	return StoreStats{VolatileBytes: s.volatileBytes, Destaged: s.destaged, CutPages: s.cutPages, Backing: backing}
}
