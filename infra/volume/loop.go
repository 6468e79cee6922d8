package main

// The server's own loop on /dev/fuse: one thread that reads each request as it arrives, answers it through go-fuse's
// protocol code (fuse.ProtocolServer), and writes a modelled I/O's reply when the model says it completes, from a
// heap of pending replies and one timerfd. The thread sleeps in epoll_wait on both and does nothing else, so an I/O
// costs two wake-ups of one thread: its arrival and its completion.
//
// Why not go-fuse's server (still here: --serve go-fuse): there, each request is handled by a goroutine that blocks
// until the I/O completes, and readers wait in read(2) on threads of their own. At 3,000 IOPS on 2 cores each I/O
// woke two or three threads and the Go scheduler's searches for work between them (findRunnable, stopm) and the
// futexes took about half of the server's CPU, 13.7-16.2 % of a core per 3,000 IOPS (docs/storage-emulation.md,
// "What the device costs"; bench/volume-fidelity.ts, part "cost", measures both servers side by side).
//
// The model's steps are the same as Serve's (model.go): enter at arrival, a queue slot (a request that finds the
// queue full waits here, in arrival order, for the next completion to free one), start (tokens, deadline, the data's
// copy), finish at the deadline.

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"runtime"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// FUSE opcodes the model times (linux/fuse.h).
const (
	opRead      = 15
	opWrite     = 16
	opFsync     = 20
	opFallocate = 43
	// The request header: len u32, opcode u32, unique u64, nodeid u64, uid, gid, pid u32, total_extlen u16, padding.
	inHeaderSize = 40
	// The reply header: len u32, error i32, unique u64.
	outHeaderSize = 16
	// fuse_write_in, before a WRITE's data.
	writeInSize = 40
)

// loopIO is the request the loop is answering, as the file system's handler sees it (loopServer.serve).
type loopIO struct {
	arrival int64
	// Whether the request already entered the model's count of I/Os in the server (it waited for a queue slot).
	entered bool
	served  bool
	ticket  ticket
}

// pendingReply is a modelled I/O's reply, written at its deadline.
type pendingReply struct {
	t ticket
	// The reply: its header (with a small reply's body), and a READ's data (a slice of the store).
	head, data []byte
}

// waitingRequest is a request that found the model's queue full: its bytes and when it arrived.
type waitingRequest struct {
	req     []byte
	arrival int64
}

type loopServer struct {
	fd, epfd, tfd int
	mount         string
	ps            *fuse.ProtocolServer
	fs            *volumeFS
	model         *Model
	buf, out      []byte
	cur           *loopIO
	pending       byDeadline[*pendingReply]
	waiting       []waitingRequest
	armedAt       int64
	done          chan struct{}
	err           error
}

// mountLoop mounts the volume's file system on `mount` (directly: root, no fusermount) and returns the loop that
// serves it once Serve is called.
func mountLoop(fs *volumeFS, mount string, opts *fuse.MountOptions) (*loopServer, error) {
	var st unix.Stat_t
	if err := unix.Stat(mount, &st); err != nil {
		return nil, err
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("/dev/fuse: %w", err)
	}
	data := fmt.Sprintf("fd=%d,rootmode=%o,user_id=0,group_id=0,max_read=%d", fd, st.Mode&unix.S_IFMT, opts.MaxWrite)
	if opts.AllowOther {
		data += ",allow_other"
	}
	if err := unix.Mount(opts.FsName, mount, "fuse."+opts.Name, unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mount: %w", err)
	}
	l := &loopServer{fd: fd, mount: mount, fs: fs, model: fs.model, done: make(chan struct{}), pending: byDeadline[*pendingReply]{at: func(p *pendingReply) int64 { return p.t.deadline }}}
	l.ps = fuse.NewProtocolServer(fs, opts)
	// A WRITE's header and payload fit, as go-fuse's own server sizes its buffers.
	l.buf = make([]byte, opts.MaxWrite+2*4096)
	l.out = make([]byte, opts.MaxWrite+2*4096)
	if l.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err == nil {
		l.tfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	}
	if err == nil {
		err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)})
	}
	if err == nil {
		err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, l.tfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.tfd)})
	}
	if err != nil {
		_ = unix.Unmount(mount, unix.MNT_DETACH)
		unix.Close(fd)
		return nil, err
	}
	fs.loop = l
	return l, nil
}

// Serve answers requests until the file system is unmounted. Each turn makes only the system calls its events need:
// at 3,000 IOPS a turn is one arrival or one completion.
func (l *loopServer) Serve() {
	runtime.LockOSThread()
	defer close(l.done)
	events := make([]unix.EpollEvent, 2)
	for {
		n, err := unix.EpollWait(l.epfd, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			l.err = err
			return
		}
		requests := false
		for _, e := range events[:n] {
			if int(e.Fd) == l.tfd {
				var expirations [8]byte
				_, _, _ = unix.RawSyscall(unix.SYS_READ, uintptr(l.tfd), uintptr(unsafe.Pointer(&expirations[0])), 8)
				l.armedAt = 0 // fired: disarmed until armed again
			} else {
				requests = true
			}
		}
		if requests && !l.readRequest() {
			return
		}
		l.completeDue()
	}
}

// readRequest answers one request from /dev/fuse (epoll says again if there are more); false once the file system
// is gone.
func (l *loopServer) readRequest() bool {
	for {
		r, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(l.fd), uintptr(unsafe.Pointer(&l.buf[0])), uintptr(len(l.buf)))
		switch errno {
		case 0:
		case unix.EAGAIN:
			return true
		case unix.EINTR, unix.ENOENT: // ENOENT: a request interrupted before it was read
			continue
		case unix.ENODEV: // unmounted
			return false
		default:
			l.err = errno
			return false
		}
		n := int(r)
		if n < inHeaderSize {
			return true
		}
		req := l.buf[:n]
		arrival := monotonicNs()
		if l.queueFull(req) {
			// Waits for a slot in arrival order; its bytes are copied, since the buffer takes the next request.
			l.model.enter(arrival)
			l.waiting = append(l.waiting, waitingRequest{req: append([]byte(nil), req...), arrival: arrival})
			return true
		}
		l.answer(req, &loopIO{arrival: arrival})
		return true
	}
}

// queueFull: the request is one the model times and its queue has no free slot, or others wait before it.
func (l *loopServer) queueFull(req []byte) bool {
	switch binary.LittleEndian.Uint32(req[4:8]) {
	case opRead, opWrite, opFsync, opFallocate:
	default:
		return false
	}
	return len(l.waiting) > 0 || l.model.queueFull()
}

// answer runs one request: a READ of the image here (its reply is a header and a slice of the store, written with
// writev when the I/O completes: no copy in the server), anything else through go-fuse's protocol code. A modelled
// I/O's reply waits for its deadline.
func (l *loopServer) answer(req []byte, io *loopIO) {
	if op := binary.LittleEndian.Uint32(req[4:8]); binary.LittleEndian.Uint64(req[16:24]) == imageNode {
		if op == opRead && len(req) >= inHeaderSize+24 {
			l.answerRead(req, io)
			return
		}
		if op == opWrite && len(req) >= inHeaderSize+writeInSize {
			l.answerWrite(req, io)
			return
		}
	}
	l.cur = io
	n, status := l.ps.HandleRequest([][]byte{req}, [][]byte{l.out})
	l.cur = nil
	if !status.Ok() {
		log.Printf("request %d: %v", binary.LittleEndian.Uint32(req[4:8]), status)
	}
	if n == 0 { // no reply (FORGET): the request ends here
		l.ended(io)
		return
	}
	l.reply(io, &pendingReply{head: l.out[:n]})
}

// reply sends a request's reply now, or keeps it until its modelled I/O's deadline (a reply that waits must not
// share a buffer: `head` is copied then).
func (l *loopServer) reply(io *loopIO, r *pendingReply) {
	if !io.served || !io.ticket.modelled || io.ticket.deadline <= monotonicNs() {
		l.ended(io)
		l.write(r.head, r.data)
		return
	}
	if len(r.head) > 0 && &r.head[0] == &l.out[0] {
		r.head = append([]byte(nil), r.head...)
	}
	r.t = io.ticket
	heap.Push(&l.pending, r)
}

// answerRead is volumeFS.Read without go-fuse between: fuse_read_in is fh u64, offset u64, size u32, ...
func (l *loopServer) answerRead(req []byte, io *loopIO) {
	offset := int64(binary.LittleEndian.Uint64(req[inHeaderSize+8 : inHeaderSize+16]))
	size := int(binary.LittleEndian.Uint32(req[inHeaderSize+16 : inHeaderSize+20]))
	reply := &pendingReply{}
	reply.head = make([]byte, outHeaderSize)
	binary.LittleEndian.PutUint64(reply.head[8:16], binary.LittleEndian.Uint64(req[8:16])) // unique
	if l.fs.begin() {
		l.cur = io
		l.fs.serve(kRead, size, io.arrival, func() { reply.data = l.fs.store.Read(offset, size) })
		l.cur = nil
	} else {
		errEIO := -int32(unix.EIO)
		binary.LittleEndian.PutUint32(reply.head[4:8], uint32(errEIO))
	}
	binary.LittleEndian.PutUint32(reply.head[0:4], uint32(outHeaderSize+len(reply.data)))
	l.reply(io, reply)
}

// answerWrite is volumeFS.Writev without go-fuse between: fuse_write_in is fh u64, offset u64, size u32,
// write_flags u32, lock_owner u64, flags u32, padding u32; the data follows it. The reply is fuse_write_out: the size
// written, u32, and padding.
func (l *loopServer) answerWrite(req []byte, io *loopIO) {
	offset := int64(binary.LittleEndian.Uint64(req[inHeaderSize+8 : inHeaderSize+16]))
	size := int(binary.LittleEndian.Uint32(req[inHeaderSize+16 : inHeaderSize+20]))
	data := req[inHeaderSize+writeInSize:]
	if size < len(data) {
		data = data[:size]
	}
	reply := &pendingReply{}
	reply.head = make([]byte, outHeaderSize+8)
	binary.LittleEndian.PutUint64(reply.head[8:16], binary.LittleEndian.Uint64(req[8:16])) // unique
	if l.fs.begin() {
		written := 0
		l.cur = io
		l.fs.serve(kWrite, len(data), io.arrival, func() { written = l.fs.store.Write(offset, [][]byte{data}) })
		l.cur = nil
		binary.LittleEndian.PutUint32(reply.head[0:4], uint32(len(reply.head)))
		binary.LittleEndian.PutUint32(reply.head[outHeaderSize:outHeaderSize+4], uint32(written))
	} else {
		reply.head = reply.head[:outHeaderSize]
		binary.LittleEndian.PutUint32(reply.head[0:4], outHeaderSize)
		errEIO := -int32(unix.EIO)
		binary.LittleEndian.PutUint32(reply.head[4:8], uint32(errEIO))
	}
	l.reply(io, reply)
}

// ended ends a request answered at once. An I/O is counted, and its slot freed, before its reply goes out (as
// under go-fuse's server, whose handler returned first): a caller that has its reply sees it counted.
func (l *loopServer) ended(io *loopIO) {
	if io.served {
		l.finish(io.ticket)
	} else if io.entered { // it waited for a slot, but its handler did not reach the model (a power cut, a no-op)
		l.model.leave(monotonicNs())
	}
}

// serve is the file system's handler reaching the model (volumeFS.serve) while the loop answers a request.
func (l *loopServer) serve(k kind, size int, _ int64, work func()) {
	io := l.cur
	if !io.entered {
		l.model.enter(io.arrival)
	}
	on, slots := l.model.arrive(k)
	if slots != nil {
		select {
		case slots <- struct{}{}:
		default:
			// Only when the queue was made smaller after queueFull looked (Set): the I/O goes without a slot.
			slots = nil
		}
	}
	if io.entered && on {
		l.model.C.QueueWaits.Add(1)
		l.model.C.QueueWaitNs.Add(uint64(monotonicNs() - io.arrival))
	}
	io.ticket = l.model.start(k, size, io.arrival, on, slots, work)
	io.served = true
}

// completeDue writes every reply whose deadline has come, lets waiting requests into the slots that frees, and arms
// the timerfd for the next deadline.
func (l *loopServer) completeDue() {
	for {
		now := monotonicNs()
		freed := false
		for l.pending.Len() > 0 && l.pending.first().t.deadline <= now {
			p := heap.Pop(&l.pending).(*pendingReply)
			l.finish(p.t)
			l.write(p.head, p.data)
			freed = true
		}
		if freed {
			l.admitWaiting()
		}
		if l.pending.Len() == 0 || l.pending.first().t.deadline > monotonicNs() {
			break
		}
	}
	if l.pending.Len() == 0 {
		l.armedAt = 0
		return
	}
	if at := l.pending.first().t.deadline; at != l.armedAt {
		l.armedAt = at
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(at)}
		if _, _, errno := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(l.tfd), unix.TFD_TIMER_ABSTIME, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); errno != 0 {
			panic(errno) // only a bad fd or value: a bug
		}
	}
}

// admitWaiting answers waiting requests while the queue has slots.
func (l *loopServer) admitWaiting() {
	for len(l.waiting) > 0 && !l.model.queueFull() {
		w := l.waiting[0]
		l.waiting[0] = waitingRequest{}
		l.waiting = l.waiting[1:]
		l.answer(w.req, &loopIO{arrival: w.arrival, entered: true})
	}
}

func (l *loopServer) finish(t ticket) {
	l.model.finish(t)
	l.fs.io.Done()
}

// write sends one reply, its data (if any) after its header in one writev; ENOENT: the request was interrupted
// meanwhile (its caller is gone).
func (l *loopServer) write(head, data []byte) {
	iov := [2]unix.Iovec{{Base: &head[0]}}
	iov[0].SetLen(len(head))
	count := 1
	if len(data) > 0 {
		iov[1] = unix.Iovec{Base: &data[0]}
		iov[1].SetLen(len(data))
		count = 2
	}
	for {
		_, _, errno := unix.RawSyscall(unix.SYS_WRITEV, uintptr(l.fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(count))
		switch errno {
		case 0, unix.ENOENT, unix.ENODEV:
			return
		case unix.EINTR:
			continue
		}
		log.Printf("reply: %v", errno)
		return
	}
}

// Unmount unmounts the file system and waits (up to 10 s) for the loop to end.
func (l *loopServer) Unmount() error {
	var err error
	for i := 0; i < 5; i++ {
		if err = unix.Unmount(l.mount, 0); !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(time.Duration(i+1) * 50 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	select {
	case <-l.done:
	case <-time.After(10 * time.Second):
		return errors.New("the loop did not end within 10 s of the unmount")
	}
	return nil
}
