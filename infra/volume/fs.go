package main

// The FUSE file system: one directory holding one file, the volume's image. The loop device opens that file with
// direct I/O, so every block I/O of the volume (a backend's read, the checkpointer's write, the kernel's page-cache
// writeback, ext4's journal, a flush) arrives here as one request: the model's one accounting point.

import (
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

const (
	rootNode  = 1
	imageNode = 2
	// ImageName is the volume image's name in the mount.
	ImageName = "volume.img"
)

type volumeFS struct {
	fuse.RawFileSystem
	store *Store
	model *Model

	// A power cut: while dead every I/O fails (the host's processes are killed meanwhile); io counts the I/Os in
	// the server, so the cut can wait for them to drain before it restores the durable state.
	mu   sync.RWMutex
	dead bool
	io   sync.WaitGroup
	uid  uint32
	gid  uint32

	// The server's own loop (loop.go), when it serves the mount: an I/O then ends when the loop replies, not when
	// its handler returns. Nil under go-fuse's server.
	loop *loopServer
}

func newVolumeFS(store *Store, model *Model) *volumeFS {
	return &volumeFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), store: store, model: model}
}

func (fs *volumeFS) String() string { return "storage-lab-volume" }

func (fs *volumeFS) attr(node uint64, out *fuse.Attr) {
	out.Ino = node
	out.Owner = fuse.Owner{Uid: fs.uid, Gid: fs.gid}
	now := uint64(time.Now().Unix())
	out.Atime, out.Mtime, out.Ctime = now, now, now
	if node == rootNode {
		out.Mode = syscall.S_IFDIR | 0o700
		out.Nlink = 2
		return
	}
	out.Mode = syscall.S_IFREG | 0o600
	out.Nlink = 1
	out.Size = uint64(fs.store.size)
	out.Blocks = out.Size / 512
	out.Blksize = pageSize
}

// Nothing about the file changes: the kernel may cache its attributes and entry for an hour.
const cacheSeconds = 3600

func (fs *volumeFS) Lookup(cancel <-chan struct{}, header *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if header.NodeId != rootNode || name != ImageName {
		return fuse.ENOENT
	}
	out.NodeId = imageNode
	out.Generation = 1
	out.EntryValid = cacheSeconds
	out.AttrValid = cacheSeconds
	fs.attr(imageNode, &out.Attr)
	return fuse.OK
}

func (fs *volumeFS) GetAttr(cancel <-chan struct{}, input *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if input.NodeId != rootNode && input.NodeId != imageNode {
		return fuse.ENOENT
	}
	out.AttrValid = cacheSeconds
	fs.attr(input.NodeId, &out.Attr)
	return fuse.OK
}

// SetAttr accepts what changes nothing (times, the same size): the image's size is the volume's.
func (fs *volumeFS) SetAttr(cancel <-chan struct{}, input *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	if input.NodeId != imageNode {
		return fuse.EPERM
	}
	if sz, ok := input.GetSize(); ok && int64(sz) != fs.store.size {
		return fuse.EPERM
	}
	out.AttrValid = cacheSeconds
	fs.attr(imageNode, &out.Attr)
	return fuse.OK
}

func (fs *volumeFS) Access(cancel <-chan struct{}, input *fuse.AccessIn) fuse.Status { return fuse.OK }

func (fs *volumeFS) Open(cancel <-chan struct{}, input *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if input.NodeId != imageNode {
		return fuse.EISDIR
	}
	// No page cache for the image (the host's page cache sits above the loop device), and direct writes in
	// parallel: without FOPEN_PARALLEL_DIRECT_WRITES the kernel takes the inode's lock for each, one write at a time.
	out.OpenFlags = fuse.FOPEN_DIRECT_IO | fuse.FOPEN_PARALLEL_DIRECT_WRITES
	out.Fh = 1
	return fuse.OK
}

func (fs *volumeFS) OpenDir(cancel <-chan struct{}, input *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if input.NodeId != rootNode {
		return fuse.ENOTDIR
	}
	return fuse.OK
}

func (fs *volumeFS) ReadDir(cancel <-chan struct{}, input *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	entries := []fuse.DirEntry{{Name: ".", Mode: syscall.S_IFDIR, Ino: rootNode}, {Name: "..", Mode: syscall.S_IFDIR, Ino: rootNode}, {Name: ImageName, Mode: syscall.S_IFREG, Ino: imageNode}}
	for i := int(input.Offset); i < len(entries); i++ {
		e := entries[i]
		e.Off = uint64(i + 1)
		if !out.AddDirEntry(e) {
			break
		}
	}
	return fuse.OK
}

func (fs *volumeFS) ReadDirPlus(cancel <-chan struct{}, input *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return fuse.ENOSYS
}

func (fs *volumeFS) StatFs(cancel <-chan struct{}, input *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	out.Bsize = pageSize
	out.Frsize = pageSize
	out.Blocks = uint64(fs.store.size / pageSize)
	out.NameLen = 255
	out.Files = 1
	return fuse.OK
}

// begin admits one I/O unless the power is cut; serve ends it (fs.io.Done()).
func (fs *volumeFS) begin() bool {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	if fs.dead {
		fs.model.C.Errors.Add(1)
		return false
	}
	fs.io.Add(1)
	return true
}

func (fs *volumeFS) Read(cancel <-chan struct{}, input *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	arrival := monotonicNs()
	if !fs.begin() {
		return nil, fuse.EIO
	}
	var data []byte
	fs.serve(kRead, int(input.Size), arrival, func() { data = fs.store.Read(int64(input.Offset), int(input.Size)) })
	return fuse.ReadResultData(data), fuse.OK
}

func (fs *volumeFS) Writev(cancel <-chan struct{}, input *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	arrival := monotonicNs()
	if !fs.begin() {
		return 0, fuse.EIO
	}
	size := 0
	for _, b := range data {
		size += len(b)
	}
	var n int
	fs.serve(kWrite, size, arrival, func() { n = fs.store.Write(int64(input.Offset), data) })
	return uint32(n), fuse.OK
}

func (fs *volumeFS) Write(cancel <-chan struct{}, input *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	return fs.Writev(cancel, input, [][]byte{data})
}

// Fsync is the volume's flush: the loop device turns a FLUSH (and the flush around a FUA write) into an fsync of
// its backing file. Every write before it becomes durable.
func (fs *volumeFS) Fsync(cancel <-chan struct{}, input *fuse.FsyncIn) fuse.Status {
	arrival := monotonicNs()
	if !fs.begin() {
		return fuse.EIO
	}
	fs.serve(kFlush, 0, arrival, fs.store.Flush)
	return fuse.OK
}

// Flush is close(2) of a file descriptor, not a device flush.
func (fs *volumeFS) Flush(cancel <-chan struct{}, input *fuse.FlushIn) fuse.Status { return fuse.OK }

func (fs *volumeFS) Release(cancel <-chan struct{}, input *fuse.ReleaseIn) {}

const (
	fallocKeepSize  = 0x01
	fallocPunchHole = 0x02
	fallocZeroRange = 0x10
)

// Fallocate carries the volume's discards (the loop device punches a hole for a discard) and write-zeroes.
func (fs *volumeFS) Fallocate(cancel <-chan struct{}, input *fuse.FallocateIn) fuse.Status {
	if input.Mode&(fallocPunchHole|fallocZeroRange) == 0 {
		return fuse.OK // allocation: the whole volume exists already
	}
	arrival := monotonicNs()
	if !fs.begin() {
		return fuse.EIO
	}
	var err error
	fs.serve(kDiscard, int(input.Length), arrival, func() { err = fs.store.Discard(int64(input.Offset), int64(input.Length)) })
	return fuse.ToStatus(err)
}

// serve runs an I/O admitted by begin through the model: here, blocking until it completes (go-fuse's server),
// or handed to the server's own loop, which replies when it completes.
func (fs *volumeFS) serve(k kind, size int, arrival int64, work func()) {
	if fs.loop != nil {
		fs.loop.serve(k, size, arrival, work)
		return
	}
	defer fs.io.Done()
	fs.model.Serve(k, size, arrival, work)
}

// Cut cuts the power: from now on every I/O fails; once those in the server have ended, every write not made
// durable is dropped. It returns the pages put back.
func (fs *volumeFS) Cut() int {
	fs.mu.Lock()
	fs.dead = true
	fs.mu.Unlock()
	fs.io.Wait()
	return fs.store.Cut()
}

// PowerOn serves I/O again, on what was durable at the cut.
func (fs *volumeFS) PowerOn() {
	fs.mu.Lock()
	fs.dead = false
	fs.mu.Unlock()
}

func (fs *volumeFS) Dead() bool {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.dead
}
