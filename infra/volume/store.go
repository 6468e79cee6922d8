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
	"bytes"
	"encoding/binary"
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

	mu sync.Mutex
	// The undo log: each page changed since the last flush with its durable content (nil: zeros, a page never
	// written before), and a bit a page saying it is in the log. A slice and a bitmap, not a map: a flush comes with
	// every WAL fsync, and emptying a map scans its whole capacity, grown to the largest log, at each one; at
	// local-quick's gp3 that was 10 % of the server's CPU, and the lookups another 4 % (a Go CPU profile, 2026-12-05).
	// Without the log (nil logged: a host no power-cut drill uses), every write is durable as it lands: no page is
	// copied before its first write since a flush, which was 11 % of the server's CPU on local-quick's hosts (a Go CPU
	// profile, 2026-12-05), and a cut is refused.
	undo   []undoEntry
	logged pageBits
	// written marks the pages written since the store opened; the others hold zeros, the content of fresh memory or
	// of a sparse file, so their durable content needs no copy, and zeros written over them no copy either (Write).
	written       pageBits
	volatileLimit int64 // bytes of undo log before it is emptied early (destaged)
	pages         sync.Pool

	// Counters (under mu).
	destaged      uint64 // times the undo log outgrew its limit and was made durable early
	cutPages      uint64 // pages put back by power cuts, in total
	volatileBytes int64  // bytes in the undo log now
}

// pageBits holds a bit a page of the volume.
type pageBits []uint64

func newPageBits(size int64) pageBits { return make(pageBits, (size/pageSize+63)/64) }

func (b pageBits) set(p int64)      { b[p/64] |= 1 << (p % 64) }
func (b pageBits) unset(p int64)    { b[p/64] &^= 1 << (p % 64) }
func (b pageBits) has(p int64) bool { return b[p/64]&(1<<(p%64)) != 0 }

type undoEntry struct {
	page    int64
	durable []byte
}

// OpenStore maps a volume of `size` bytes: backing "" keeps it in RAM, else in that (sparse) file; undoable: keep
// the undo log that a power cut needs.
func OpenStore(size int64, backing string, volatileLimit int64, undoable bool) (*Store, error) {
	if size <= 0 || size%pageSize != 0 {
		return nil, fmt.Errorf("volume size %d is not a positive multiple of %d", size, pageSize)
	}
	s := &Store{size: size, volatileLimit: volatileLimit, written: newPageBits(size)}
	if undoable {
		s.logged = newPageBits(size)
	}
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

// Write copies bufs to off, logging the durable content of each page it changes first. Whole pages of zeros over
// pages never written are not copied: their memory is populated in one call (zeroed by the kernel, no fault a page),
// so the volume holds them as it holds any page written, and nothing is logged, since a power cut would put back the
// zeros they hold. Together with logging no copy of a fresh page (logPage), 1 GiB written onto fresh space costs the
// server 0.74-0.76 s of CPU as zeros and 0.86-0.91 s as data, where it cost 2.07-2.39 and 1.72-1.87 s before
// (bench/volume-fidelity.ts, part "zeros", both servers alternately, 2026-12-05): a restore writes 3.7 GiB of data
// set and 4 GiB of WAL segments onto a fresh volume.
func (s *Store) Write(off int64, bufs [][]byte) int {
	data := bufs[0]
	if len(bufs) != 1 {
		data = bytes.Join(bufs, nil)
	}
	n := s.clamp(off, len(data))
	if n == 0 {
		return 0
	}
	data = data[:n]
	end := off + int64(n)
	s.mu.Lock()
	zeros := int64(-1) // the first page of a run of fresh pages written with zeros, -1: none
	populate := func(to int64) {
		if zeros >= 0 {
			_ = unix.Madvise(s.data[zeros*pageSize:to*pageSize], unix.MADV_POPULATE_WRITE) // only memory: an error leaves faults to do it
			zeros = -1
		}
	}
	for p := off / pageSize; p <= (end-1)/pageSize; p++ {
		lo, hi := max(off, p*pageSize), min(end, (p+1)*pageSize)
		chunk := data[lo-off : hi-off]
		if !s.written.has(p) && hi-lo == pageSize && allZero(chunk) {
			s.written.set(p)
			if zeros < 0 {
				zeros = p
			}
			continue
		}
		populate(p)
		s.logPage(p)
		copy(s.data[lo:hi], chunk)
	}
	populate((end-1)/pageSize + 1)
	s.destageOverLimit()
	s.mu.Unlock()
	return n
}

// allZero reports whether b (a page) holds only zeros.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.NativeEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
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
		s.logPage(p)
	}
	s.destageOverLimit()
}

// logPage saves page p's durable content unless it is logged since the last flush, and marks it written. Under mu.
func (s *Store) logPage(p int64) {
	if !s.Undoable() {
		s.written.set(p)
		return
	}
	if s.logged.has(p) {
		return
	}
	var page []byte // a page never written holds zeros: nothing to copy
	if s.written.has(p) {
		page = s.pages.Get().([]byte)
		copy(page, s.data[p*pageSize:(p+1)*pageSize])
	}
	s.written.set(p)
	s.logged.set(p)
	s.undo = append(s.undo, undoEntry{p, page})
	s.volatileBytes += pageSize
}

// destageOverLimit makes the log durable early once it outgrows its limit. Under mu.
func (s *Store) destageOverLimit() {
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
	for _, e := range s.undo {
		if e.durable != nil {
			s.pages.Put(e.durable) //nolint:staticcheck // a fixed-size page, reused
		}
		s.logged.unset(e.page)
	}
	clear(s.undo) // the pages go back to the pool, not held by the slice's spare capacity
	s.undo = s.undo[:0]
	s.volatileBytes = 0
}

// Undoable reports whether the store keeps the undo log a power cut needs.
func (s *Store) Undoable() bool { return s.logged != nil }

// Cut puts back the durable content of every page written since the last flush; it returns how many pages it put
// back. The caller makes sure no I/O is in flight, and that the store is undoable.
func (s *Store) Cut() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.undo)
	for _, e := range s.undo {
		p := e.page
		if e.durable == nil {
			clear(s.data[p*pageSize : (p+1)*pageSize])
		} else {
			copy(s.data[p*pageSize:(p+1)*pageSize], e.durable)
		}
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
	// PowerCuts: the undo log is kept (a cut can drop what was not flushed).
	PowerCuts bool `json:"powerCuts"`
}

func (s *Store) Stats() StoreStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	backing := "ram"
	if s.file != nil {
		backing = "file"
	}
	return StoreStats{VolatileBytes: s.volatileBytes, Destaged: s.destaged, CutPages: s.cutPages, Backing: backing, PowerCuts: s.Undoable()}
}
